"""File and symbol reference extraction, and the scope of file refs (dream STEP 2a/2b)."""

import pytest

from pipeline.rules.refs import REPO_RELATIVE, UNVERIFIABLE, code_like, extract_refs, scope


def files(text: str) -> list[str]:
    return list(extract_refs(text).files)


def symbols(text: str) -> list[str]:
    return list(extract_refs(text).symbols)


def test_paths_with_a_slash_and_known_extension_anywhere_in_the_text():
    text = "Sessions live in src/auth/session.ts and the router in (src/api/router.ts)."
    assert files(text) == ["src/api/router.ts", "src/auth/session.ts"]


def test_backtick_paths_folders_and_bare_file_names():
    text = "See `src/hooks/` and `hooks.json`, also `docs/guide.md`."
    assert files(text) == ["docs/guide.md", "hooks.json", "src/hooks/"]


def test_line_suffixes_are_dropped():
    text = "`run-hook.mjs:141` shims it; see src/api/router.ts:186 and `src/hooks/bin/run.mjs:140-150` and src/a.ts#L10"
    assert files(text) == ["run-hook.mjs", "src/a.ts", "src/api/router.ts", "src/hooks/bin/run.mjs"]


def test_bare_file_names_only_count_in_inline_code():
    # In prose "Next.js" or "session.ts" is too often a word; in backticks a bare name is a file.
    assert files("Built with Next.js and session.ts") == []
    assert files("Run `npx vitest run -c vitest.site.config.ts` here") == ["vitest.site.config.ts"]
    assert files("`Next.js 16`") == []


def test_urls_are_kept_whole_and_not_read_as_paths():
    text = "Docs at https://example.com/docs/setup/install.md, done."
    assert files(text) == ["https://example.com/docs/setup/install.md"]


def test_external_and_template_paths_are_extracted_for_the_report():
    text = "Hook `~/.claude/hooks/pre.sh`, config /etc/nginx/nginx.conf, $HOME/bin/tool.sh, `src/<category>/<name>.ts`"
    assert files(text) == ["$HOME/bin/tool.sh", "/etc/nginx/nginx.conf", "src/<category>/<name>.ts", "~/.claude/hooks/pre.sh"]


def test_paths_inside_code_fences_count_but_symbols_there_do_not():
    text = "Intro.\n\n```ts\nimport { helperFn } from 'src/lib/helpers.ts'\nfunction buildIndex() {}\nconst x = makeThing()\n```\n"
    refs = extract_refs(text)
    assert refs.files == ("src/lib/helpers.ts",)
    assert refs.symbols == ()


@pytest.mark.parametrize(
    "text, expected",
    [
        ("call `createSession()` first", ["createSession"]),
        ("then getWorkflowSummary() is never called", ["getWorkflowSummary"]),
        ("`SessionStore` keeps them", ["SessionStore"]),
        ("`DEBT_SCAN_EXTENSIONS` is the list", ["DEBT_SCAN_EXTENSIONS"]),
        ("`tool_input.subagent_type` is set", ["subagent_type", "tool_input"]),
        ("`Promise.allSettled` swallows it", ["allSettled"]),
        ("the `class MigrationRunner` decides", ["MigrationRunner"]),
        ("def run_migrations and class Runner are there", ["Runner", "run_migrations"]),
        ("built with `new RegExp(x)` and `.map(e => e)`", ["RegExp"]),
        ("`Agent()` spawns", ["Agent"]),
    ],
)
def test_symbol_forms(text, expected):
    assert symbols(text) == expected


def test_plain_words_are_not_symbols():
    text = "The `hooks` and `Promise` and `README` words; a class of problems; function to call; item(s) here."
    assert symbols(text) == []


def test_code_like():
    assert code_like("run_migrations") and code_like("SessionStore") and code_like("getX") and code_like("MAX_BODY")
    assert not code_like("hooks") and not code_like("Promise") and not code_like("README") and not code_like("a_")


TOP = frozenset({"src", "docs", ".claude"})


@pytest.mark.parametrize(
    "ref, expected",
    [
        ("src/auth/session.ts", REPO_RELATIVE),
        (".claude/settings.json", REPO_RELATIVE),
        ("src/hooks/", REPO_RELATIVE),
        ("session.ts", REPO_RELATIVE),  # bare name: looked up anywhere in the repository
        ("~/.claude/settings.json", UNVERIFIABLE),
        ("/etc/nginx/nginx.conf", UNVERIFIABLE),
        ("$HOME/bin/tool.sh", UNVERIFIABLE),
        ("https://example.com/a/b.md", UNVERIFIABLE),
        ("vendor/acme/sdk.ts", UNVERIFIABLE),  # no top-level folder "vendor"
        ("../other-repo/src/a.ts", UNVERIFIABLE),
        ("src/<category>/<name>.ts", UNVERIFIABLE),
        ("src/node_modules/pkg/index.js", UNVERIFIABLE),
        ("node_modules/fumadocs/dist/a.js", UNVERIFIABLE),
    ],
)
def test_scope(ref, expected):
    assert scope(ref, TOP)[0] == expected
