"""The shared text module: BOMs, line endings (CRLF, CR-only), fences, headings, truncation."""

from __future__ import annotations

from pipeline.layouts.crux.render import append_note, set_tracker_strength
from pipeline.text.frontmatter_edit import set_keys
from pipeline.text.lines import (
    ATX_HEADING, append_paragraphs, decode_utf8, encode_utf8, newline_of, fenced_blocks, split_bom, split_eol,
)
from pipeline.text.truncate import HOOK_STRIP, clip, shorten


def test_a_bom_is_kept_through_decode_and_encode():
    data = b"\xef\xbb\xbfhello\r\n"
    text, bom = decode_utf8(data)
    assert (text, bom) == ("hello\r\n", True)
    assert encode_utf8(text, bom) == data
    assert split_bom(b"plain") == (False, b"plain")


def test_line_endings_are_the_first_one_the_text_uses():
    assert newline_of("a\r\nb\r\n") == "\r\n"
    assert newline_of("a\rb\r") == "\r"
    assert newline_of("a\nb") == "\n"
    assert newline_of("no break") == "\n" and newline_of("", "\r\n") == "\r\n"
    # A Markdown line ends at CRLF, LF or CR only: U+2028 is inside it (split_lines, below).
    assert split_eol("x\r\n") == ("x", "\r\n") and split_eol("x\r") == ("x", "\r") and split_eol("x\u2028") == ("x\u2028", "")


def test_markdown_lines_end_at_crlf_lf_and_cr_only():
    from pipeline.text.lines import line_count, split_lines

    text = "a\r\nb\rc\nd\u2028### e\x85f\x0cg\n\n"
    assert split_lines(text) == ["a", "b", "c", "d\u2028### e\x85f\x0cg", ""]
    assert "".join(split_lines(text, keepends=True)) == text
    assert line_count(text) == 5
    for plain in ("", "x", "x\n", "\n", "x\n\ny", "x\r\ny\r\n", "\r\r\n", "x\r"):  # where both agree
        assert line_count(plain) == len(plain.splitlines())
        assert split_lines(plain) == plain.splitlines()
        assert split_lines(plain, keepends=True) == plain.splitlines(keepends=True)


def test_a_cr_only_file_gets_cr_lines_from_every_writer():
    # Before the shared module, appended notes and new keys in a CR-only file ended with LF.
    assert append_note("# T\rbody\r", "note") == "# T\rbody\r\rnote\r"
    assert append_paragraphs("body", ["a", "b"]) == "body\n\na\n\nb\n"
    edited = set_keys("---\r\ntitle: x\r\n---\r\nbody\r\n", {"strength": 3})
    assert edited == "---\r\ntitle: x\r\nstrength: 3\r\n---\r\nbody\r\n"
    tracker = set_tracker_strength("slug: a\rreferences: 2\r", 4)
    assert tracker is not None and "\n" not in tracker


def test_fences_hide_headings():
    lines = ["# a", "```", "# not a heading", "```", "## b"]
    code = fenced_blocks(lines).code
    seen = [line for line, inside in zip(lines, code) if not inside and ATX_HEADING.match(line)]
    assert seen == ["# a", "## b"]


def test_truncation():
    assert clip("abcdef", 4) == "abc…" and clip("abc", 4) == "abc"
    hook = "one two three, four five six seven"
    assert shorten(hook, 20, strip=HOOK_STRIP) == "one two three…"
    assert shorten("word " * 10, 12, word_after=1) == "word word…"
    assert shorten("x" * 30, 10, word_after=1) == "x" * 9 + "…"


def test_a_rewrite_keeps_each_kept_line_ending_of_a_mixed_file():
    from pipeline.text.lines import with_old_line_endings

    old = "# Title\r\n\nintro\r\n- [a](a.md)\n- [b](b.md)\n"
    # b's entry goes, c's comes: the kept lines end as they did, the new one as the file's first line.
    assert with_old_line_endings("# Title\n\nintro\n- [a](a.md)\n- [c](c.md)\n", old) == (
        "# Title\r\n\nintro\r\n- [a](a.md)\n- [c](c.md)\r\n"
    )
    # The n-th copy of a line ends as the n-th did; a text with no ending at its end keeps none.
    assert with_old_line_endings("x\nx\nx", "x\r\nx\n") == "x\r\nx\nx"
    assert with_old_line_endings("a\nb\n", "a\nb\n") == "a\nb\n"


def test_a_cr_only_file_is_lines_to_the_grammar_and_keeps_its_endings():
    """Red-team 2 bug 9: MEMORY.md's grammar split at LF only, so a CR-only index was one line."""
    from pipeline.text.lines import join_pieces, line_pieces, line_texts, with_old_line_endings

    text = "# T\r- [a](a.md)\r\n- [b](b.md)\n"
    assert line_texts(text) == ["# T", "- [a](a.md)", "- [b](b.md)", ""]
    assert line_pieces(text) == [("# T", "\r"), ("- [a](a.md)", "\r\n"), ("- [b](b.md)", "\n"), ("", "")]
    assert join_pieces(line_pieces(text)) == text and join_pieces(line_pieces("a\rb")[:1]) == "a"
    # a rewrite of a CR-only file: its kept lines and its new ones end in CR
    assert with_old_line_endings("# T\n- [a](a.md)\n- [c](c.md)\n", "# T\r- [a](a.md)\r") == "# T\r- [a](a.md)\r- [c](c.md)\r"
