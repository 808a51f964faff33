"""Consolidation: the `metadata` stage (stage.py) and its helpers.

groups.py chooses which memories belong together, fields.py fills their front matter, merge_body.py
merges their bodies without losing a fact, volumes.py and volume_files.py cut and name the volumes a
topic over its budget is split into (shared with the `split` stage).
"""
