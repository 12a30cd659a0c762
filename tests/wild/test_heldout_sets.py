"""The held-out sets 13 to 23 (tests/data/heldoutN/, one folder per public thread that no other set cites), each
labelled from its threads' conclusions and kept outside the repository until its first read by the code as it stood
then: that read (FIRST_READ.json, summed in docs/accuracy.md) is the blind measure. A case read wrong carries
`known_gap` and runs as a strict xfail. What each set holds and when it was read: ``SETS``. Each set's checks are the
same (``wild_cases``): its cases, its expectations' form, one thread a case, threads no earlier set cites, a first read
recorded for every case, and the spread of classes asked of it."""
from __future__ import annotations

from dataclasses import dataclass

import pytest
from wild_cases import DATA as _DATA
from wild_cases import (
    case_params,
    check_case,
    check_expectations,
    check_first_read,
    check_one_thread_per_case,
    check_threads_new,
)
from wild_cases import table as wild


@dataclass(frozen=True)
class HeldOut:
    about: str  # what the set holds and when it was read (blind)
    earlier: tuple[str, ...]  # the sets written before it: none of them cites its threads
    least_cases: int
    least_faults: tuple[tuple[str, int], ...]  # (fault class, cases at least)
    least_crashes: int  # crash, cuda and oom together
    least_launchers: int


SETS: dict[str, HeldOut] = {
    "heldout13": HeldOut(
        about=(
            "The thirteenth held-out set (tests/data/heldout13/, one folder per public thread that no other set "
            "cites): 51 logs in the shapes users paste (PyTorch, NCCL, nccl-tests, DeepSpeed, vLLM, SGLang, "
            "Lightning, Accelerate, LLaMA-Factory, ms-swift, torchtitan, verl, ColossalAI, Ray, Horovod, DeepEP, "
            "SkyPilot, TensorRT-LLM and other projects' threads), labelled from each thread's conclusion and kept "
            "outside the repository until its first read, by the code as it stood after the sixteenth round of "
            "class fixes (made from earlier sets' misreadings, never from this set): that read (FIRST_READ.json, "
            "summed in docs/accuracy.md) is the blind measure. A case read wrong carries `known_gap` and runs as "
            "a strict xfail."
        ),
        earlier=(
            'wild', 'heldout', 'heldout2', 'heldout3', 'heldout4', 'classes', 'classes2', 'classes3',
            'classes4', 'classes5', 'classes6', 'classes7', 'classes8', 'classes9', 'classes10', 'classes11',
            'classes12', 'classes13', 'classes14', 'heldout5', 'heldout6', 'heldout7', 'heldout8', 'heldout9',
            'heldout10', 'heldout11', 'heldout12', 'classes15', 'classes16',
        ),
        least_cases=40, least_crashes=4, least_launchers=8,
        least_faults=(('hang', 10), ('config_error', 6), ('desync', 1), ('healthy', 5), ('network', 5),
                      ('degraded', 3))),
    "heldout14": HeldOut(
        about=(
            "The fourteenth held-out set (tests/data/heldout14/, one folder per public thread that no other set "
            "cites): 40 logs in the shapes users paste (PyTorch, NCCL, vLLM, SGLang, Lightning, Accelerate, "
            "DeepSpeed, LLaMA-Factory, ms-swift, axolotl, torchtitan, torchtune, verl, JAX-Toolbox, PhysicsNeMo, "
            "Ultralytics and other projects' threads), labelled from each thread's conclusion and kept outside "
            "the repository until its first read, by the code as it stood after the seventeenth round of class "
            "fixes (made from earlier sets' misreadings, never from this set): that read (FIRST_READ.json, summed "
            "in docs/accuracy.md) is the blind measure. A case read wrong carries `known_gap` and runs as a "
            "strict xfail."
        ),
        earlier=(
            'wild', 'heldout', 'heldout2', 'heldout3', 'heldout4', 'classes', 'classes2', 'classes3',
            'classes4', 'classes5', 'classes6', 'classes7', 'classes8', 'classes9', 'classes10', 'classes11',
            'classes12', 'classes13', 'classes14', 'heldout5', 'heldout6', 'heldout7', 'heldout8', 'heldout9',
            'heldout10', 'heldout11', 'heldout12', 'heldout13', 'classes15', 'classes16', 'classes17',
        ),
        least_cases=40, least_crashes=4, least_launchers=8,
        least_faults=(('hang', 10), ('config_error', 6), ('desync', 1), ('healthy', 5), ('degraded', 3))),
    "heldout15": HeldOut(
        about=(
            "The fifteenth held-out set (tests/data/heldout15/, one folder per public thread that no other set "
            "cites): 44 logs in the shapes users paste (PyTorch, NCCL, vLLM, TGI, Accelerate, DeepSpeed, "
            "Megatron-LM, ms-swift, axolotl, torchtitan, torchtune, verl, OpenRLHF, LLaMA-Factory, composer, "
            "Horovod, JAX, XGBoost, mmdetection and other projects' threads), labelled from each thread's "
            "conclusion and kept outside the repository until its first read, by the code as it stood after the "
            "nineteenth round of class fixes (made from earlier sets' misreadings, never from this set): that "
            "read (FIRST_READ.json, summed in docs/accuracy.md) is the blind measure. A case read wrong carries "
            "`known_gap` and runs as a strict xfail."
        ),
        earlier=(
            'wild', 'heldout', 'heldout2', 'heldout3', 'heldout4', 'classes', 'classes2', 'classes3',
            'classes4', 'classes5', 'classes6', 'classes7', 'classes8', 'classes9', 'classes10', 'classes11',
            'classes12', 'classes13', 'classes14', 'heldout5', 'heldout6', 'heldout7', 'heldout8', 'heldout9',
            'heldout10', 'heldout11', 'heldout12', 'heldout13', 'classes15', 'classes16', 'classes17',
            'heldout14', 'classes18', 'classes19',
        ),
        least_cases=40, least_crashes=4, least_launchers=8,
        least_faults=(('hang', 10), ('config_error', 6), ('desync', 1), ('healthy', 3), ('degraded', 3))),
    "heldout16": HeldOut(
        about=(
            "The sixteenth held-out set (tests/data/heldout16/, one folder per public thread that no other set "
            "cites): 48 logs in the shapes users paste (PyTorch, NCCL, nccl-tests, vLLM, SGLang, TRL, Accelerate, "
            "Lightning, DeepSpeed, Megatron Bridge, ms-swift, torchtitan, verl, OpenRLHF, ColossalAI, "
            "LLaMA-Factory, Ray, diffusers, Kubernetes operators and other projects' threads), labelled from each "
            "thread's conclusion and kept outside the repository until its first read, by the code as it stood "
            "after the twentieth round of class fixes (made from earlier sets' misreadings, never from this set): "
            "that read (FIRST_READ.json, summed in docs/accuracy.md) is the blind measure. A case read wrong "
            "carries `known_gap` and runs as a strict xfail."
        ),
        earlier=(
            'wild', 'heldout', 'heldout2', 'heldout3', 'heldout4', 'classes', 'classes2', 'classes3',
            'classes4', 'classes5', 'classes6', 'classes7', 'classes8', 'classes9', 'classes10', 'classes11',
            'classes12', 'classes13', 'classes14', 'heldout5', 'heldout6', 'heldout7', 'heldout8', 'heldout9',
            'heldout10', 'heldout11', 'heldout12', 'heldout13', 'classes15', 'classes16', 'classes17',
            'heldout14', 'classes18', 'classes19', 'heldout15', 'classes20',
        ),
        least_cases=40, least_crashes=4, least_launchers=8,
        least_faults=(('hang', 10), ('config_error', 6), ('desync', 1), ('healthy', 3), ('degraded', 3))),
    "heldout17": HeldOut(
        about=(
            "The seventeenth held-out set (tests/data/heldout17/, one folder per public thread that no other set "
            "cites): 32 logs in the shapes users paste (PyTorch, NCCL, nccl-tests, vLLM, TRL, NeMo-RL, OpenRLHF, "
            "EasyR1, ColossalAI, LLaMA-Factory, ms-swift, DeiT, fairseq, sd-scripts, JAX-Toolbox, CloudAI, "
            "Hugging Face Hub jobs and other projects' threads; a small batch), labelled from each thread's "
            "conclusion and kept outside the repository until its first read, by the code as it stood after the "
            "twenty-first round of class fixes (made from earlier sets' misreadings, never from this set): that "
            "read (FIRST_READ.json, summed in docs/accuracy.md) is the blind measure. A case read wrong carries "
            "`known_gap` and runs as a strict xfail."
        ),
        earlier=(
            'wild', 'heldout', 'heldout2', 'heldout3', 'heldout4', 'classes', 'classes2', 'classes3',
            'classes4', 'classes5', 'classes6', 'classes7', 'classes8', 'classes9', 'classes10', 'classes11',
            'classes12', 'classes13', 'classes14', 'heldout5', 'heldout6', 'heldout7', 'heldout8', 'heldout9',
            'heldout10', 'heldout11', 'heldout12', 'heldout13', 'classes15', 'classes16', 'classes17',
            'heldout14', 'classes18', 'classes19', 'heldout15', 'classes20', 'heldout16', 'classes21',
        ),
        least_cases=30, least_crashes=4, least_launchers=8,
        least_faults=(('hang', 5), ('config_error', 6), ('desync', 1), ('healthy', 3), ('degraded', 1))),
    "heldout18": HeldOut(
        about=(
            "The eighteenth held-out set (tests/data/heldout18/, one folder per public thread that no other set "
            "cites): 48 logs in the shapes users paste (PyTorch, NCCL, nccl-tests, torchtune, torchtitan, "
            "LLaMA-Factory, ms-swift, axolotl, verl, DeepSpeed, Megatron, NeMo-RL, vLLM, SGLang, Lightning, "
            "open-instruct and other projects' threads), labelled from each thread's conclusion and kept outside "
            "the repository until its first read, by the code as it stood after the twenty-third round of class "
            "fixes (made from earlier sets' misreadings, never from this set): that read (FIRST_READ.json, summed "
            "in docs/accuracy.md) is the blind measure. A case read wrong carries `known_gap` and runs as a "
            "strict xfail."
        ),
        earlier=(
            'wild', 'heldout', 'heldout2', 'heldout3', 'heldout4', 'classes', 'classes2', 'classes3',
            'classes4', 'classes5', 'classes6', 'classes7', 'classes8', 'classes9', 'classes10', 'classes11',
            'classes12', 'classes13', 'classes14', 'heldout5', 'heldout6', 'heldout7', 'heldout8', 'heldout9',
            'heldout10', 'heldout11', 'heldout12', 'heldout13', 'classes15', 'classes16', 'classes17',
            'heldout14', 'classes18', 'classes19', 'heldout15', 'classes20', 'heldout16', 'classes21',
            'heldout17', 'classes22', 'classes23',
        ),
        least_cases=40, least_crashes=4, least_launchers=8,
        least_faults=(('hang', 10), ('config_error', 6), ('desync', 3), ('healthy', 5), ('degraded', 4))),
    "heldout19": HeldOut(
        about=(
            "The nineteenth held-out set (tests/data/heldout19/, one folder per public thread that no other set "
            "cites): 38 logs in the shapes users paste (PyTorch, NCCL, nccl-tests, aws-ofi-nccl, JAX, "
            "LLaMA-Factory, ms-swift, verl, OpenRLHF, ColossalAI, Composer, torchtitan, fairseq, open_clip, "
            "Kubeflow and other projects' threads), labelled from each thread's conclusion and kept outside the "
            "repository until its first read, by the code as it stood after the twenty-fourth round of class "
            "fixes (made from earlier sets' misreadings, never from this set): that read (FIRST_READ.json, summed "
            "in docs/accuracy.md) is the blind measure. A case read wrong carries `known_gap` and runs as a "
            "strict xfail."
        ),
        earlier=(
            'wild', 'heldout', 'heldout2', 'heldout3', 'heldout4', 'classes', 'classes2', 'classes3',
            'classes4', 'classes5', 'classes6', 'classes7', 'classes8', 'classes9', 'classes10', 'classes11',
            'classes12', 'classes13', 'classes14', 'heldout5', 'heldout6', 'heldout7', 'heldout8', 'heldout9',
            'heldout10', 'heldout11', 'heldout12', 'heldout13', 'classes15', 'classes16', 'classes17',
            'heldout14', 'classes18', 'classes19', 'heldout15', 'classes20', 'heldout16', 'classes21',
            'heldout17', 'classes22', 'classes23', 'heldout18', 'classes24',
        ),
        least_cases=35, least_crashes=4, least_launchers=8,
        least_faults=(('hang', 8), ('config_error', 6), ('desync', 3), ('healthy', 5), ('degraded', 3))),
    "heldout20": HeldOut(
        about=(
            "The twentieth held-out set (tests/data/heldout20/, one folder per public thread that no other set "
            "cites): 16 logs in the shapes users paste (NCCL, nccl-tests, PyTorch, vLLM, SGLang, TensorRT-LLM, "
            "HAMi, Volcano and MiniMax threads; a small batch: the search budget was nearly spent), labelled from "
            "each thread's conclusion and kept outside the repository until its first read, by the code as it "
            "stood after the twenty-fifth round of class fixes (made from earlier sets' misreadings, never from "
            "this set): that read (FIRST_READ.json, summed in docs/accuracy.md) is the blind measure. A case read "
            "wrong carries `known_gap` and runs as a strict xfail."
        ),
        earlier=(
            'wild', 'heldout', 'heldout2', 'heldout3', 'heldout4', 'classes', 'classes2', 'classes3',
            'classes4', 'classes5', 'classes6', 'classes7', 'classes8', 'classes9', 'classes10', 'classes11',
            'classes12', 'classes13', 'classes14', 'heldout5', 'heldout6', 'heldout7', 'heldout8', 'heldout9',
            'heldout10', 'heldout11', 'heldout12', 'heldout13', 'classes15', 'classes16', 'classes17',
            'heldout14', 'classes18', 'classes19', 'heldout15', 'classes20', 'heldout16', 'classes21',
            'heldout17', 'classes22', 'classes23', 'heldout18', 'classes24', 'heldout19', 'classes25',
        ),
        least_cases=15, least_crashes=3, least_launchers=5,
        least_faults=(('hang', 3), ('config_error', 5), ('degraded', 2))),
    "heldout21": HeldOut(
        about=(
            "The twenty-first held-out set (tests/data/heldout21/, one folder per public thread that no other set "
            "cites): 43 logs in the shapes users paste (PyTorch, NCCL and nccl-tests threads and pull requests, "
            "fairseq, metaseq, DeepSpeed, Accelerate, vLLM, SGLang, NeMo, Lightning, torchtitan, llm-foundry, "
            "OpenRLHF and other threads; NCCL 2.3 to 2.29), labelled from each thread's conclusion and kept "
            "outside the repository until its first read, by the code as it stood after the twenty-sixth round of "
            "class fixes (made from earlier sets' misreadings, never from this set): that read (FIRST_READ.json, "
            "summed in docs/accuracy.md) is the blind measure. A case read wrong carries `known_gap` and runs as "
            "a strict xfail."
        ),
        earlier=(
            'wild', 'heldout', 'heldout2', 'heldout3', 'heldout4', 'classes', 'classes2', 'classes3',
            'classes4', 'classes5', 'classes6', 'classes7', 'classes8', 'classes9', 'classes10', 'classes11',
            'classes12', 'classes13', 'classes14', 'heldout5', 'heldout6', 'heldout7', 'heldout8', 'heldout9',
            'heldout10', 'heldout11', 'heldout12', 'heldout13', 'classes15', 'classes16', 'classes17',
            'heldout14', 'classes18', 'classes19', 'heldout15', 'classes20', 'heldout16', 'classes21',
            'heldout17', 'classes22', 'classes23', 'heldout18', 'classes24', 'heldout19', 'classes25',
            'heldout20', 'classes26',
        ),
        least_cases=40, least_crashes=6, least_launchers=8,
        least_faults=(('hang', 6), ('config_error', 10), ('degraded', 3), ('healthy', 3))),
    "heldout22": HeldOut(
        about=(
            "The twenty-second held-out set (tests/data/heldout22/, one folder per public thread that no other "
            "set cites): 46 logs in the shapes users paste (NCCL, nccl-tests, PyTorch, fairseq, detectron2, "
            "torchtitan, llm-foundry, ColossalAI, OpenRLHF, verl, ms-swift, vLLM, SGLang, Accelerate, Lightning, "
            "Ray, Horovod, Kubeflow, aws-ofi-nccl and other threads; NCCL 2.3 to 2.18 and later), labelled from "
            "each thread's conclusion and kept outside the repository until its first read, by the code as it "
            "stood after the twenty-seventh round of class fixes (made from earlier sets' misreadings, never from "
            "this set): that read (FIRST_READ.json, summed in docs/accuracy.md) is the blind measure. A case read "
            "wrong carries `known_gap` and runs as a strict xfail."
        ),
        earlier=(
            'wild', 'heldout', 'heldout2', 'heldout3', 'heldout4', 'classes', 'classes2', 'classes3',
            'classes4', 'classes5', 'classes6', 'classes7', 'classes8', 'classes9', 'classes10', 'classes11',
            'classes12', 'classes13', 'classes14', 'heldout5', 'heldout6', 'heldout7', 'heldout8', 'heldout9',
            'heldout10', 'heldout11', 'heldout12', 'heldout13', 'classes15', 'classes16', 'classes17',
            'heldout14', 'classes18', 'classes19', 'heldout15', 'classes20', 'heldout16', 'classes21',
            'heldout17', 'classes22', 'classes23', 'heldout18', 'classes24', 'heldout19', 'classes25',
            'heldout20', 'classes26', 'heldout21', 'classes27',
        ),
        least_cases=40, least_crashes=6, least_launchers=8,
        least_faults=(('hang', 6), ('config_error', 10), ('degraded', 4), ('healthy', 4))),
    "heldout23": HeldOut(
        about=(
            "The twenty-third held-out set (tests/data/heldout23/, one folder per public thread that no other "
            "set cites): 44 logs in the shapes users paste (NCCL, nccl-tests, RCCL tests, PyTorch, torch elastic, "
            "Lightning, Accelerate, transformers, diffusers, torchtune, Llama, Transformer Engine, DeepEP, "
            "NeMo RL, Xinference, YOLOv5, Ultralytics, mmsegmentation, SpeechBrain, Coqui TTS, sd-scripts, icefall "
            "and other threads, one blog post-mortem; NCCL 2.4 to 2.26), labelled from each thread's conclusion "
            "and kept outside the repository until its first read, by the code as it stood after round 29 of "
            "class fixes (made from earlier sets' misreadings, never from this set): that read (FIRST_READ.json, "
            "summed in docs/accuracy.md) is the blind measure. A case read wrong carries `known_gap` and runs as "
            "a strict xfail."
        ),
        earlier=(
            'wild', 'heldout', 'heldout2', 'heldout3', 'heldout4', 'classes', 'classes2', 'classes3',
            'classes4', 'classes5', 'classes6', 'classes7', 'classes8', 'classes9', 'classes10', 'classes11',
            'classes12', 'classes13', 'classes14', 'heldout5', 'heldout6', 'heldout7', 'heldout8', 'heldout9',
            'heldout10', 'heldout11', 'heldout12', 'heldout13', 'classes15', 'classes16', 'classes17',
            'heldout14', 'classes18', 'classes19', 'heldout15', 'classes20', 'heldout16', 'classes21',
            'heldout17', 'classes22', 'classes23', 'heldout18', 'classes24', 'heldout19', 'classes25',
            'heldout20', 'classes26', 'heldout21', 'classes27', 'heldout22', 'classes28', 'classes29',
        ),
        least_cases=40, least_crashes=6, least_launchers=8,
        least_faults=(('hang', 6), ('config_error', 10), ('healthy', 3))),
}
CASES = {name: wild.load_expected(_DATA / name) for name in SETS}


@pytest.mark.parametrize("want", [p for name in SETS for p in case_params(CASES[name])])
def test_heldout_case(want):
    check_case(want)


@pytest.mark.parametrize("name", SETS)
def test_heldout_expectations_are_well_formed(name):
    check_expectations(CASES[name], _DATA / name)


@pytest.mark.parametrize("name", SETS)
def test_heldout_cites_one_thread_per_case(name):
    check_one_thread_per_case(_DATA / name, CASES[name])


@pytest.mark.parametrize("name,other", [(name, other) for name, s in SETS.items() for other in s.earlier])
def test_heldout_threads_are_new(name, other):
    check_threads_new(_DATA / name, other)


@pytest.mark.parametrize("name", SETS)
def test_heldout_first_read_is_recorded_for_every_case(name):
    check_first_read(_DATA / name, CASES[name])


@pytest.mark.parametrize("name", SETS)
def test_heldout_spread_of_classes(name):
    s, cases = SETS[name], CASES[name]
    faults = [w["fault_class"] for w in cases]
    assert len(cases) >= s.least_cases, len(cases)
    for fault, least in s.least_faults:
        assert faults.count(fault) >= least, (fault, faults.count(fault))
    assert sum(faults.count(f) for f in ("crash", "cuda", "oom")) >= s.least_crashes
    assert len({w["launcher"] for w in cases}) >= s.least_launchers
