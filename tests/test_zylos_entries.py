"""The zylos entry grammar (layouts/zylos/entries.py): what the writer cuts and adds is what the
reader parses, from one definition."""

from __future__ import annotations

import datetime as dt

from pipeline.layouts.zylos.entries import FIELD, SESSION_HEADER, field_line, parse_reference, session_header
from pipeline.layouts.zylos.writer import RefFile

TEXT = """# Decisions

## Active

### Use ESM
- **Decision:** ship ES modules
- **Importance:** 2

```md
### not an entry (fenced)
```

### Keep CJS shim
- **Decision:** one release more
"""


def test_blocks_end_where_the_reader_ends_entries():
    parsed = parse_reference(TEXT)
    assert [e.title for e in parsed.entries] == ["Use ESM", "Keep CJS shim"]
    assert parsed.boundaries == [1, 3, 5, 13]
    ref = RefFile.parse("reference/decisions.md", False, TEXT)
    assert ref.boundaries == parsed.boundaries
    assert ref.block_end(5) == 12  # the fenced heading stays inside the first entry's block


def test_written_fields_and_headers_read_back():
    line = field_line("Archived", "2026-11-29 (duplicate; merged into use-esm)")
    m = FIELD.match(line)
    assert m and m.group("name").rstrip(":") == "Archived" and m.group("value") == "2026-11-29 (duplicate; merged into use-esm)"
    header = SESSION_HEADER.search(session_header(dt.date(2026, 11, 29)) + "\n")
    assert header and header.group(1) == "2026-11-29"
    retired = parse_reference(TEXT.replace("- **Importance:** 2", "- **Importance:** 2\n" + line))
    assert retired.entries[0].fields["archived"].startswith("2026-11-29")
