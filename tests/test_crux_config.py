"""Reading `.crux/crux-memories.json`: list flags, placeholders, defaults, disabled memories, bad input."""

import json

import pytest

from helpers import FIXTURES, run_cli
from pipeline.config import CruxConfig, Settings
from pipeline.errors import ConfigError, UsageError
from pipeline.layouts.crux import reader as adapter
from pipeline.layouts.crux.reader import parse_config, read_flags, resolve_placeholders


def parse(data: dict) -> adapter.StoreConfig:
    return parse_config(data, CruxConfig())


def test_list_flags_and_placeholders_like_the_real_store():
    store = parse(
        {
            "flags": [{"enableMemories": "true"}, {"enableMemoryCompression": "true"}, {"enableMemoryConsolidation": "false"}],
            "cruxMemories": {
                "enabled": "${flags.enableMemories}",
                "compression": "${flags.enableMemoryCompression}",
                "consolidation": "${flags.enableMemoryConsolidation}",
            },
        }
    )
    assert store.crux.enableMemories is True
    assert store.crux.enableMemoryCompression is True
    assert store.crux.enableMemoryConsolidation is False


def test_dict_flags_with_booleans():
    store = parse({"flags": {"enableMemories": True, "enableMemoryConsolidation": True}})
    assert store.crux.enableMemoryConsolidation is True
    assert store.crux.enableMemoryCompression is False  # absent = disabled


def test_absent_flags_mean_enabled_memories_and_disabled_features():
    store = parse({"cruxMemories": {}})
    assert (store.crux.enableMemories, store.crux.enableMemoryCompression, store.crux.enableMemoryConsolidation) == (True, False, False)


def test_placeholder_to_an_absent_flag_is_absent_not_text():
    # a placeholder may name a flag the list leaves out (the real sample config omits consolidation)
    store = parse({"flags": [{"enableMemories": "true"}], "cruxMemories": {"consolidation": "${flags.enableMemoryConsolidation}"}})
    assert store.crux.enableMemoryConsolidation is False


def test_placeholders_resolve_inside_text_and_nested_values():
    flags = read_flags([{"enableMemories": "true"}, {"team": "payments"}])
    value = {"a": "${flags.enableMemories}", "b": ["dir-${flags.team}", "${flags.enableMemories}!"], "c": 3}
    assert resolve_placeholders(value, flags) == {"a": True, "b": ["dir-payments", "true!"], "c": 3}


def test_alias_used_when_the_flag_is_absent():
    assert parse({"cruxMemories": {"compression": "true"}}).crux.enableMemoryCompression is True


@pytest.mark.parametrize(
    "data, where",
    [
        ({"flags": [{"enableMemories": "false"}]}, "flags.enableMemories"),
        ({"flags": {"enableMemories": False}}, "flags.enableMemories"),
        ({"flags": [{"enableMemories": "FALSE"}], "cruxMemories": {"enabled": "${flags.enableMemories}"}}, "flags.enableMemories"),
        ({"cruxMemories": {"enabled": "false"}}, "cruxMemories.enabled"),
    ],
)
def test_disabled_memories_are_a_usage_error(data, where):
    with pytest.raises(UsageError) as err:
        parse(data)
    assert f"memories are disabled by {where}" in str(err.value)


def test_values_are_read_verbatim_and_omitted_ones_default():
    store = parse(
        {
            "cruxMemories": {
                "storage": {"memoriesDir": "mem", "indexFile": "idx/memory-index.yml"},
                "typePriority": ["core", "learning", "idea", "archived"],
                "typeTransitions": {"idea": {"promoteAt": 3, "promoteTo": "learning"}, "learning": {"promoteAt": None}},
                "demoteAfterDaysUnreferenced": 30,
                "archiveAfterDaysUnreferenced": 60,
                "sizeUnit": "bytes",
                "compressionMinLines": 40,
                "maxMemorySize": 120,
                "referenceTracking": {"trackingDir": "refs", "promotionToRuleThreshold": 12, "maxReferencesStored": 4},
                "unitOfWork": "task",
                "dream": {"workDir": "tasks"},
            }
        }
    )
    c = store.crux
    assert c.storage.memoriesDir == "mem" and c.storage.indexFile == "idx/memory-index.yml"
    assert c.storage.agentMemoriesDir == "memories/agents"  # omitted: the default
    assert c.typePriority == ["core", "learning", "idea", "archived"]
    # the file's transitions replace the defaults wholesale: no redflag or core entry appears
    assert set(c.typeTransitions) == {"idea", "learning"}
    assert c.typeTransitions["idea"].promoteAt == 3 and c.typeTransitions["learning"].promoteAt is None
    assert (c.demoteAfterDaysUnreferenced, c.archiveAfterDaysUnreferenced) == (30, 60)
    assert (c.sizeUnit, c.compressionMinLines, c.maxMemorySize, c.maxConsolidatedSize) == ("bytes", 40, 120, 2000)
    assert (c.trackingDir, c.promotionToRuleThreshold, c.maxReferencesStored) == ("refs", 12, 4)
    assert (store.work_dir, store.unit_of_work) == ("tasks", "task")


def test_defaults_when_the_file_says_nothing():
    store = parse({})
    assert store.crux == CruxConfig()
    assert (store.work_dir, store.unit_of_work) == ("specs", "spec")


@pytest.mark.parametrize(
    "data, fragment",
    [
        ({"flags": "enableMemories"}, "flags must be"),
        ({"flags": ["enableMemories"]}, "flags[0]"),
        ({"flags": [{"enableMemoryCompression": "yes"}]}, "flags.enableMemoryCompression"),
        ({"cruxMemories": []}, "cruxMemories must be an object"),
        ({"cruxMemories": {"storage": "memories"}}, "cruxMemories.storage must be an object"),
        ({"cruxMemories": {"storage": {"memoriesDir": "../elsewhere"}}}, "cruxMemories.storage.memoriesDir"),
        ({"cruxMemories": {"storage": {"memoriesDir": "/etc"}}}, "cruxMemories.storage.memoriesDir"),
        ({"cruxMemories": {"referenceTracking": {"trackingDir": "../../x"}}}, "trackingDir"),
        ({"cruxMemories": {"demoteAfterDaysUnreferenced": -1}}, "demoteAfterDaysUnreferenced"),
        ({"cruxMemories": {"archiveAfterDaysUnreferenced": "soon"}}, "archiveAfterDaysUnreferenced"),
        ({"cruxMemories": {"referenceTracking": {"promotionToRuleThreshold": True}}}, "promotionToRuleThreshold"),
        ({"cruxMemories": {"typePriority": "core"}}, "typePriority"),
        ({"cruxMemories": {"typeTransitions": {"idea": 5}}}, "typeTransitions"),
        ({"cruxMemories": {"typeTransitions": {"idea": {"promoteAt": "five"}}}}, "typeTransitions.idea.promoteAt"),
        ({"cruxMemories": {"sizeUnit": "pages"}}, "sizeUnit"),
        # out of range (config.py's ranges): a config error naming the key, not a value taken
        ({"cruxMemories": {"archiveAfterDaysUnreferenced": 999999999}}, "cruxMemories.archiveAfterDaysUnreferenced: Input should be less"),
        ({"cruxMemories": {"compressionTarget": 150}}, "cruxMemories.compressionTarget: Input should be less"),
        ({"cruxMemories": {"maxConsolidatedSize": 0}}, "cruxMemories.maxConsolidatedSize: Input should be greater"),
        ({"cruxMemories": {"typeTransitions": {"idea": {"promoteAt": 10**12}}}}, "typeTransitions.idea.promoteAt: Input should be less"),
        ({"cruxMemories": {"dream": {"workDir": ""}}}, "dream.workDir"),
        ({"cruxMemories": {"storage": {"archiveDir": ".memconsolidate/runs"}}}, "cruxMemories.storage.archiveDir"),
        # The index is rewritten whole: it may not be the config, a memory or inside a memory folder.
        ({"cruxMemories": {"storage": {"indexFile": ".crux/crux-memories.json"}}}, "indexFile must be a .yml file"),
        ({"cruxMemories": {"storage": {"indexFile": "memories/core/index.yml"}}}, "lies inside memoriesDir"),
        ([1, 2], "must be a JSON object"),
    ],
)
def test_wrong_shapes_are_config_errors_on_one_line(data, fragment):
    with pytest.raises(ConfigError) as err:
        parse_config(data, CruxConfig())
    message = str(err.value)
    assert fragment in message
    assert "\n" not in message and message.startswith(".crux/crux-memories.json")


def test_configure_returns_settings_with_the_store_values():
    settings = adapter.configure(FIXTURES / "crux", Settings())
    assert settings.crux.compressionMinLines == 40
    assert settings.crux.enableMemoryCompression and settings.crux.enableMemoryConsolidation
    assert "experiment" in settings.crux.typeTransitions
    assert Settings().crux.compressionMinLines == 500  # the input settings are not modified


# ---------------------------------------------------------------------------------------------
# through the command line: one line on stderr, exit 2, no traceback


def copy_fixture(tmp_path):
    import shutil

    root = tmp_path / "store"
    shutil.copytree(FIXTURES / "crux", root)
    return root


def one_line_exit_2(res):
    assert res.returncode == 2, (res.returncode, res.stdout, res.stderr)
    assert "Traceback" not in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1, res.stderr
    return res.stderr


def test_cli_disabled_memories_exit_2(tmp_path):
    root = copy_fixture(tmp_path)
    cfg = root / ".crux" / "crux-memories.json"
    data = json.loads(cfg.read_text())
    data["flags"][0] = {"enableMemories": "false"}
    cfg.write_text(json.dumps(data))
    err = one_line_exit_2(run_cli("plan", str(root), "--model", "none"))
    assert "memories are disabled by flags.enableMemories" in err


def test_cli_invalid_json_exit_2(tmp_path):
    root = copy_fixture(tmp_path)
    (root / ".crux" / "crux-memories.json").write_text('{"flags": [ {"enableMemories": "true"} ,, ]}')
    err = one_line_exit_2(run_cli("plan", str(root), "--model", "none"))
    assert "not valid JSON" in err


def test_cli_binary_config_exit_2(tmp_path):
    root = copy_fixture(tmp_path)
    (root / ".crux" / "crux-memories.json").write_bytes(b"\x00\x01\x02{}")
    err = one_line_exit_2(run_cli("plan", str(root), "--model", "none"))
    assert "cannot read .crux/crux-memories.json" in err


def test_cli_bad_value_exit_2(tmp_path):
    root = copy_fixture(tmp_path)
    cfg = root / ".crux" / "crux-memories.json"
    data = json.loads(cfg.read_text())
    data["cruxMemories"]["demoteAfterDaysUnreferenced"] = "ninety"
    cfg.write_text(json.dumps(data))
    err = one_line_exit_2(run_cli("plan", str(root), "--model", "none"))
    assert "cruxMemories.demoteAfterDaysUnreferenced" in err


def test_the_store_root_itself_is_a_folder_inside_the_store():
    # "." has no first part: checked without an IndexError, accepted, and not taken to hold the index.
    crux = parse_config({"cruxMemories": {"storage": {"memoriesDir": "."}, "dream": {"workDir": "."}}}, CruxConfig()).crux
    assert crux.storage.memoriesDir == "." and crux.storage.indexFile == ".crux/memory-index.yml"


@pytest.mark.parametrize(
    "toml, key",
    [
        ('[crux]\ntrackingDir = "../sibling/trk"\n', "crux.trackingDir"),
        ('[crux.storage]\nmemoriesDir = "../sibling/mem"\n', "crux.storage.memoriesDir"),
        ('[crux.storage]\narchiveDir = "/tmp/elsewhere"\n', "crux.storage.archiveDir"),
        ('[crux.storage]\nindexFile = ".crux/crux-memories.json"\n', "crux.storage"),
    ],
)
def test_a_store_toml_naming_a_crux_path_outside_the_store_is_refused(tmp_path, toml, key):
    # The same rule as the store's own JSON config: a settings file of any source may not lead the
    # reader (which listed the outside folder's files) or the writer out of the store.
    root = copy_fixture(tmp_path)
    (root / ".memconsolidate.toml").write_text(toml)
    before = {p: p.read_bytes() for p in root.rglob("*") if p.is_file()}
    for command in (("plan",), ("apply", "--yes")):
        err = one_line_exit_2(run_cli(command[0], str(root), "--model", "none", *command[1:]))
        assert f"invalid setting {key}" in err
    assert {p: p.read_bytes() for p in root.rglob("*") if p.is_file()} == before
