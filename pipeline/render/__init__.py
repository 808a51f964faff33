"""What the command line shows a person: the plan, status, runs, eval scores, apply and run summaries.

Each renderer takes records and a width and returns text; none reads the disk or the terminal (the
command line measures the terminal and passes the width in), so the same records always print the
same bytes at the same width.
"""
