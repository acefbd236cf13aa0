"""``gpusizer launch`` (issue 17 point 3): the SkyPilot task built from an offer, checked key by
key here and, where SkyPilot is installed (the launch extra), by SkyPilot's own parser
(``sky.Task.from_yaml_config``) with no cloud account and no network: SkyPilot reads its catalog
from ``~/.sky/catalogs/v8/<cloud>/vms.csv``, which the test writes from the shared copy."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from gpusizer.errors import CatalogError, SheetError
from gpusizer.launch import prepare_launch, skypilot_task
from gpusizer.launch.prepare import task_yaml
from gpusizer.sheet import load_sheet, parse_sheet_text

from ..conftest import SHARED, run_cli
from ..decision.test_criteria import FULL_OFFER, SHEET, measurement, plan, states

VAST = SHARED / "data" / "catalogs" / "skypilot-catalog_v8_vast_vms.csv"
H200 = "vast/1x-H200-32-65536/France, FR, EU"  # the copy's first row
LORA = """\
model: {id: meta-llama/Meta-Llama-3.1-8B}
task: lora
weights: bf16
training: {sequence_length: 2048, microbatch: 1, gradient_checkpointing: true}
requirements: {storage: 200 GB}
"""


@pytest.fixture
def vast():
    if not VAST.is_file():
        pytest.skip(f"{VAST} absent (../shared)")
    return VAST


@pytest.fixture
def lora(tmp_path):
    path = tmp_path / "lora.yaml"
    path.write_text(LORA)
    return path


def test_task_from_a_skypilot_catalog_row(vast, lora, tmp_path):
    p = prepare_launch(load_sheet(lora), lora, H200, catalogs=[vast], out_dir=tmp_path / "ev")
    c = p.task.config
    # the row: InstanceType 1x-H200-32-65536, AcceleratorName H200, count 1, Region France
    assert c["resources"] == {"cloud": "vast", "region": "France, FR, EU",
                              "instance_type": "1x-H200-32-65536", "accelerators": {"H200": 1},
                              "disk_size": 200, "use_spot": False}  # 200 GB: requirements
    assert (Path(c["workdir"]) / "pyproject.toml").is_file()
    assert "'.[measure]'" in c["setup"] and "torch>=2.4,<2.15" in c["setup"]
    assert "constraints.txt" not in c["setup"] and "cpu" not in c["setup"]
    run = c["run"]
    assert "gpusizer measure ~/gpusizer-inputs/lora.yaml --out ~/gpusizer-evidence" in run
    assert f"--offer-id '{H200}' --provider vast" in run and "--image" in run
    assert c["file_mounts"] == {"~/gpusizer-inputs/lora.yaml": str(lora.resolve())}
    # the evidence comes back, then the machine goes
    assert p.commands[1].startswith(f"rsync -Pavz {p.task.cluster}:~/gpusizer-evidence/ ")
    assert p.commands[2] == f"sky down {p.task.cluster} --yes"
    assert yaml.safe_load(p.yaml_text) == c


def test_a_catalog_without_cloud_keys_exits_2_naming_the_field(lora, tmp_path):
    cat = tmp_path / "offers.yaml"
    cat.write_text(yaml.safe_dump([{"id": "a", "provider": "x", "card": "H100 SXM", "cards": 1,
                                    "usd_per_hour": 2.0, "cloud": "lambda",
                                    "instance_type": "gpu_1x_h100_sxm5"}]))
    with pytest.raises(CatalogError) as err:
        prepare_launch(load_sheet(lora), lora, "a", catalogs=[cat], out_dir=tmp_path)
    assert err.value.field == "region"
    out = run_cli("launch", str(lora), "--offer", "a", "--catalog", str(cat), "--out",
                  str(tmp_path / "ev"), "--dry-run", check=2)
    assert "region" in out.stderr and "\n" not in out.stderr.strip()
    bad = run_cli("launch", str(lora), "--offer", "nope", "--catalog", str(cat), "--out",
                  str(tmp_path / "ev"), "--dry-run", check=2)
    assert "--offer" in bad.stderr


def test_disk_comes_from_the_offer_or_the_sheet(lora, tmp_path):
    cat = tmp_path / "offers.yaml"
    row = {"id": "a", "provider": "lambda", "card": "H100", "cards": 8, "usd_per_hour": 20.0,
           "cloud": "lambda", "region": "us-east-1", "instance_type": "gpu_8x_h100_sxm5",
           "storage": "1 TB"}
    cat.write_text(yaml.safe_dump([row]))
    p = prepare_launch(load_sheet(lora), lora, "a", catalogs=[cat], out_dir=tmp_path)
    assert p.task.config["resources"]["disk_size"] == 1000  # 10**12 B = 1000 GB
    assert p.task.config["resources"]["accelerators"] == {"H100": 8}
    bare = tmp_path / "bare.yaml"
    bare.write_text(LORA.replace("requirements: {storage: 200 GB}\n", ""))
    cat.write_text(yaml.safe_dump([{k: v for k, v in row.items() if k != "storage"}]))
    with pytest.raises(CatalogError) as err:
        prepare_launch(load_sheet(bare), bare, "a", catalogs=[cat], out_dir=tmp_path)
    assert err.value.field == "storage"


def test_quality_run_when_the_sheet_declares_quality(tmp_path):
    sheet_path = tmp_path / "q.yaml"
    sheet_path.write_text(LORA + "quality: {corpus: eval/frozen.jsonl}\n")
    lock = tmp_path / "q.quality-lock.json"
    lock.write_text("{}")
    from gpusizer.catalog.types import Offer
    offer = Offer(id="a", provider="lambda", card="H100", cards=1, days=None, total_usd=None,
                  cloud="lambda", region="us-east-1", instance_type="gpu_1x_h100_sxm5")
    t = skypilot_task(load_sheet(sheet_path), sheet_path, offer, None, workdir=tmp_path,
                      lock=lock)
    assert ("gpusizer quality run ~/gpusizer-inputs/q.yaml --candidate bf16 --lock "
            "~/gpusizer-inputs/q.quality-lock.json --out ~/gpusizer-evidence/quality"
            in t.config["run"])
    assert t.config["file_mounts"]["~/gpusizer-inputs/eval/frozen.jsonl"] == \
        str(tmp_path / "eval" / "frozen.jsonl")


def test_a_serving_engine_starts_and_its_log_is_imported(tmp_path):
    sheet_path = tmp_path / "v.yaml"
    sheet_path.write_text("model: {id: meta-llama/Meta-Llama-3.1-8B}\ntask: inference\n"
                          "weights: bf16\ninference: {engine: vllm, prompt_tokens: 1024, "
                          "new_tokens: 128}\nrequirements: {storage: 100 GB}\n")
    from gpusizer.catalog.cards import lookup_card
    from gpusizer.catalog.types import Offer
    offer = Offer(id="a", provider="lambda", card="H100", cards=1, days=None, total_usd=None,
                  cloud="lambda", region="us-east-1", instance_type="gpu_1x_h100_sxm5")
    card = lookup_card("H100 SXM")
    sheet = load_sheet(sheet_path)
    with pytest.raises(SheetError) as err:  # no command to hold the verdict under
        skypilot_task(sheet, sheet_path, offer, card, workdir=tmp_path)
    assert err.value.field == "inference.engine" and "vllm" in str(err.value)
    cmd = "vllm serve meta-llama/Meta-Llama-3.1-8B --max-model-len 1152"
    t = skypilot_task(sheet, sheet_path, offer, card, workdir=tmp_path, engine_command=cmd)
    run = t.config["run"]
    assert f"({cmd}) > ~/gpusizer-evidence/vllm-startup.log 2>&1 &" in run
    # CONTRACT.md: gpusizer import vllm-log LOG --sheet SHEET --card NAME --out DIR
    assert ("gpusizer import vllm-log ~/gpusizer-evidence/vllm-startup.log --sheet "
            "~/gpusizer-inputs/v.yaml --card 'H100 SXM' --out ~/gpusizer-evidence" in run)
    assert "pip install 'vllm'" in t.config["setup"]


def test_names_from_files_and_catalogs_stay_shell_words(tmp_path):
    from gpusizer.catalog.types import Offer
    sheet_path = tmp_path / "a b;touch x.yaml"
    sheet_path.write_text(LORA)
    offer = Offer(id="x; rm -rf ~", provider="p $(id)", card="H100", cards=1, days=None,
                  total_usd=None, cloud="lambda", region="us-east-1",
                  instance_type="gpu_1x_h100_sxm5")
    run = skypilot_task(load_sheet(sheet_path), sheet_path, offer, None,
                        workdir=tmp_path).config["run"]
    assert "gpusizer measure ~/gpusizer-inputs/'a b;touch x.yaml' " in run
    assert "--offer-id 'x; rm -rf ~' --provider 'p $(id)'" in run


def test_evidence_scoped_to_the_launched_offer_verifies_it_alone(tmp_path):
    # what the task's `gpusizer measure --offer-id full --provider acme --image ...` records
    twin = {**FULL_OFFER, "id": "twin"}
    doc = measurement(SHEET)
    doc["scope"] = {**doc["scope"], "offer_id": "full", "provider": "acme",
                    "environment": {"image": "skypilot default image (acme)", "torch": "2.5.1",
                                    "cuda": "12.4", "driver": "550.54"}}
    result = plan(tmp_path, [FULL_OFFER, twin], evidence=[doc])
    assert states(result, "full")[0]["compatibility"] == "acceptable"
    assert states(result, "twin")[0]["compatibility"] == "to_confirm"


_PARSE = """
import json, sys, yaml, sky
out = []
for path in sys.argv[1:]:
    t = sky.Task.from_yaml_config(yaml.safe_load(open(path)))
    r = list(t.resources)[0]
    out.append([str(r.cloud), r.region, r.instance_type, r.accelerators, r.disk_size])
print(json.dumps(out))
"""


def test_skypilot_parses_every_generated_task(vast, lora, tmp_path):
    # SkyPilot pins click below what huggingface_hub needs, so CI keeps it in a venv of its own
    # (.ci/run, .ci/skypilot-requirements.txt) and names its python here
    python = os.environ.get("GPUSIZER_SKYPILOT_PYTHON")
    if not python:
        pytest.importorskip("sky", reason="the launch extra (SkyPilot) is not installed here "
                                          "and GPUSIZER_SKYPILOT_PYTHON names no python that has it")
        python = sys.executable
    home = tmp_path / "home"
    (home / ".sky" / "catalogs" / "v8" / "vast").mkdir(parents=True)
    (home / ".sky" / "catalogs" / "v8" / "vast" / "vms.csv").write_bytes(vast.read_bytes())
    ids = [H200, "vast/2x-H200-32-65536/Michigan, US, NA"]
    files = []
    for i, offer in enumerate(ids):
        p = prepare_launch(load_sheet(lora), lora, offer, catalogs=[vast], out_dir=tmp_path)
        files.append(tmp_path / f"task{i}.yaml")
        files[-1].write_text(task_yaml(p.task.config))
    env = {**os.environ, "HOME": str(home)}
    done = subprocess.run([python, "-c", _PARSE, *map(str, files)], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    parsed = json.loads(done.stdout.strip().splitlines()[-1])
    assert parsed == [["Vast", "France, FR, EU", "1x-H200-32-65536", {"H200": 1}, 200],
                      ["Vast", "Michigan, US, NA", "2x-H200-32-65536", {"H200": 2}, 200]]
