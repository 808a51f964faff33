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


# --- what a repository need not contain (texts from memories the rules were not written from) --


def test_a_kind_of_file_named_by_its_suffix_is_not_a_file():
    # `.spec.tsx` is what the glob `*.spec.tsx` names: files of a kind, not one file called that
    text = "Co-locate `.spec.tsx` files; types go in `.d.ts`, stories in `.stories.tsx`, styles in `.module.scss`."
    assert files(text) == []
    dotfiles = "Lint with `.eslintrc.json`, MCP servers in `.mcp.json`, tests by `vitest.config.ts` over `page.test.ts`."
    assert files(dotfiles) == [".eslintrc.json", ".mcp.json", "page.test.ts", "vitest.config.ts"]
    # a glob under a folder stays a pattern, checked as one; alone it names no file
    assert files("Specs match `e2e/**/*.spec.ts`; unit tests `*.test.ts`.") == ["e2e/**/*.spec.ts"]


def test_a_plain_word_called_as_a_method_is_not_a_symbol():
    # held out: torsten-techlead, fairchild, webeverything
    assert symbols("Use active_drep_count() not dreps.len()") == ["active_drep_count"]
    assert symbols("compute V_off as `sweep_results.iter().map(|(_,v)| *v).fold(NEG_INFINITY, f64::max)`") == []
    assert symbols("1. `process.cwd()` in the workflow script, or `os.tmpdir()`") == []
    assert symbols("(`ValiditySourceOrchestrator.merged()` calls `assertMergedValidity`)") == [
        "ValiditySourceOrchestrator", "assertMergedValidity"]
    assert symbols("`Agent()` spawns; then `flush()` runs") == ["Agent", "flush"]  # called on its own, it counts


@pytest.mark.parametrize(
    "text, expected",
    [  # held out: roxabi-tester, siglens-writer
        ("- `NAVIGATION_TIMEOUT = 45_000` for `waitForURL` calls; `15_000` for `toBeVisible` assertions", ["waitForURL"]),
        ("- Submit: `getByRole('button', { name: /create account|sign up|register|creating/i })`", []),
        ("checking `toHaveProperty`/`not.toHaveProperty('name')`; `toHaveBeenCalledWith({...})` (no `expect.objectContaining`)", []),
        ("`useContext` hook. It only works when React's hook dispatcher is active", []),
        # the project's own names beside them stay
        ("`useCanAccess` guards it; `toFeedback()` maps rows; `getUserByEmail()` reads one", ["getUserByEmail", "toFeedback", "useCanAccess"]),
        ("`vi.spyOn(store, 'loadSnapshot')` then `describe()` and `it()` blocks with `beforeAll`", []),
    ],
)
def test_a_framework_s_own_vocabulary_is_not_a_symbol(text, expected):
    assert symbols(text) == expected


@pytest.mark.parametrize(
    "text, expected",
    [  # the name decides, not the object it is called on
        ("After a resize, call `screen.redrawStatusBar()` or the bar tears.", ["redrawStatusBar"]),
        ("After a resize, call screen.redrawStatusBar() or the bar tears.", ["redrawStatusBar"]),
        ("`cy.loginAsAdmin()` seeds the session; then `expect(rows).toHaveLength(2)`", ["loginAsAdmin"]),
        ("`screen.getByRole('row')`, `screen.findAllByText(\"x\")`, `screen.debug()`", []),
        # the runners' own helpers, on their objects or on a mock (held out: siglens, recommendarr, specrails)
        ("`vi.spyOn(mod, 'f')`; `vi.useFakeTimers()` then `vi.setSystemTime(d)`; `vi.stubEnv('KEY', 'v')`", []),
        ("`jest.requireActual('./x')`; `expect.objectContaining({ id })`; `spy.mockRestore()`; `fn.mockResolvedValueOnce(v)`", []),
    ],
)
def test_a_framework_s_own_names_are_dropped_not_whatever_its_objects_call(text, expected):
    assert symbols(text) == expected


def test_a_project_s_method_called_on_screen_keeps_its_memory_from_a_prune(tmp_path):
    # src/tui/screen.py deleted; `redrawStatusBar` lives on in src/ui/terminal.py: the code moved
    from helpers import commit_all, git
    from test_staleness_history import actions, judged, write

    root = tmp_path / "proj"
    write(root / "src/tui/screen.py", "class Screen:\n    def redrawStatusBar(self):\n        pass\n")
    write(root / "src/main.py", "def main():\n    pass\n")
    commit_all(root, "one")
    git(root, "rm", "-q", "src/tui/screen.py")
    write(root / "src/ui/terminal.py", "class Terminal:\n    def redrawStatusBar(self):\n        self.win.refresh()\n")
    commit_all(root, "split")
    plan, f = judged(root, "redraw", "After a resize in `src/tui/screen.py`, call `screen.redrawStatusBar()` or the bar tears.")
    assert f["class"] == "PARTIALLY_STALE" and f["missing"] == ["src/tui/screen.py"]
    assert "redraw.md" not in actions(plan, "prune_stale")


def test_a_framework_name_the_repository_lacks_is_not_missing():
    from pipeline.rules.repo_index import RepoIndex
    from pipeline.rules.staleness import classify

    index = RepoIndex(root="/r", files=frozenset({"src/Chart.vue"}), dirs=frozenset({"src"}), identifiers=frozenset({"drawChart"}))
    refs = extract_refs("`src/Chart.vue` calls `drawChart()`; unlike React's `useMemo`, tests use `expect(x).toBe(1)`.")
    assert refs.symbols == ("drawChart",)
    assert classify(refs, index).cls == "FRESH"
