"""Every reader pairs code fences as CommonMark does (`text.lines.fenced_blocks`): a fence closes only on
a line of its character, at least as long, with nothing after it but blanks.

The zylos entry grammar and its edits, the consolidation's volume cutter and the relative-date masks
each toggled "in code" on any fence line (the masks closed on a fence with an info string), so a
```` ``` ```` line inside a ```` ```` ```` block, or a ```` ```python ```` line inside a ```` ``` ```` block,
ended the block: the code after it was read as text (headings cut at, fields read, dates rewritten).
"""

from __future__ import annotations

import datetime as dt

from pipeline.layouts.zylos.edits import statement_segments
from pipeline.layouts.zylos.entries import parse_reference
from pipeline.rules.relative_dates import scan_relative_dates
from pipeline.stages.consolidate.volumes import sections_of
from pipeline.text.lines import split_lines

# An entry whose notes quote a Markdown snippet in a four-backtick fence, the snippet holding a
# three-backtick fence of its own, then the next entry.
LONGER_FENCE = """## Active

### Use the release template
- **Decision:** copy the template below into every release note

````
```
### Timeline
- **Decision:** a field of the template, not of the entry
```
````

### Tag releases from main only
- **Decision:** tags are cut from main
"""

# A three-backtick block holding a ```python line (an info string: no closing fence), then the next entry.
INFO_STRING_INSIDE = """### Keep the snippet
- **Description:** how the snippet is quoted

```
```python
### not a heading
```

### Next entry
- **Description:** read as an entry
"""


def test_zylos_headings_in_a_longer_fence_are_code():
    parsed = parse_reference(LONGER_FENCE)
    assert [e.title for e in parsed.entries] == ["Use the release template", "Tag releases from main only"]
    assert parsed.unclosed_fence is None
    assert parsed.entries[0].fields["decision"] == "copy the template below into every release note"
    assert parsed.entries[1].section == "Active"


def test_zylos_a_fence_with_an_info_string_does_not_close():
    parsed = parse_reference(INFO_STRING_INSIDE)
    assert [e.title for e in parsed.entries] == ["Keep the snippet", "Next entry"]
    assert parsed.unclosed_fence is None


def test_zylos_a_fence_never_closed_is_still_reported():
    parsed = parse_reference("### A\n- **Decision:** x\n\n````\n```\n### B\n```\n")
    assert parsed.unclosed_fence == 4  # the four-backtick fence: no later line closes it
    assert parse_reference("### A\n```\n### B\n").unclosed_fence == 2


def test_zylos_edits_read_the_statement_where_the_reader_does():
    lines = split_lines(LONGER_FENCE, keepends=True)
    entry = parse_reference(LONGER_FENCE).entries[0]
    next_entry = lines.index("### Tag releases from main only\n") + 1  # 1-based
    segs = statement_segments(lines, entry.line_start, next_entry - 1)
    assert " ".join(s.text for s in segs) == entry.fields["decision"] == "copy the template below into every release note"
    assert [s.line for s in segs] == [entry.line_start + 1]


def test_volumes_never_cut_at_a_heading_inside_a_longer_fence():
    body = "## One\nalpha\n\n````\n```\n## not a section\ncode\n```\n````\n\n## Two\nbeta\n"
    secs = sections_of(body, 100, lambda text: len(text.splitlines()))
    assert [s.heading for s in secs] == ["One", "Two"]
    assert "## not a section" in secs[0].text


def test_volumes_a_fence_with_an_info_string_does_not_close():
    body = "## One\nalpha\n\n```\n```python\n## not a section\n```\n\n## Two\nbeta\n"
    secs = sections_of(body, 100, lambda text: len(text.splitlines()))
    assert [s.heading for s in secs] == ["One", "Two"]


def test_a_date_after_a_fence_with_an_info_string_inside_a_block_is_code():
    text = "Notes:\n```\n```python\ndeployed yesterday\n```\n"
    scan = scan_relative_dates(text, dt.date(2026, 4, 1))
    assert not scan.replacements and not scan.held


def test_a_date_after_the_block_is_still_rewritten():
    text = "````\n```python\ncode\n````\nWe deployed yesterday.\n"
    scan = scan_relative_dates(text, dt.date(2026, 4, 1))
    assert [text[r.start:r.end] for r in scan.replacements] == ["yesterday"]


def test_volumes_a_fence_never_closed_still_runs_to_the_end():
    # where it was meant to end cannot be told: no cut at a heading that may be code
    body = "## One\nalpha\n\n```\n## maybe code\nx\n\n## Two\nbeta\n"
    secs = sections_of(body, 100, lambda text: len(text.splitlines()))
    assert [s.heading for s in secs] == ["One"]
