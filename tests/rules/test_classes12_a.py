"""Round twelve's cases (tests/data/classes12/c12a_*): a setting's fault read as its symptom. c10d's own check for two
ranks on one GPU ("Duplicated GPU device is not allowed by NCCL ... Most likely your world_size is larger than the
total number of GPUs") is the knowledge base's duplicate-GPU entry, a config error like NCCL's "Duplicate GPU
detected", not a crash of the rank that raised it."""
from __future__ import annotations

import pytest
from class_cases import CaseSet
from wild_cases import DATA

SET = CaseSet(DATA / "classes12")
MINE = SET.names("c12a_")


@pytest.mark.parametrize("name", MINE)
def test_class_case(name):
    SET.check(name)


@pytest.mark.parametrize("text,entry", [
    ("RuntimeError: Duplicated GPU device is not allowed by NCCL. Rank [0] and rank [4] both attached to GPU device 0 "
     "on the same host h1. Most likely your world_size is larger than the total number of GPUs", "init-duplicate-gpu"),
    ("[rank3]: RuntimeError: Duplicated GPU device is not allowed by NCCL. Rank [3] and rank [7] both attached to GPU "
     "device 3 on the same host h2.", "init-duplicate-gpu"),
    ("RuntimeError: CUDA error: invalid device ordinal", None),
])
def test_c10ds_duplicated_device_check(text, entry):
    from ncclscope.detectors.catalogue import classify

    k = classify(text)
    assert (k.id if k is not None and k.id == "init-duplicate-gpu" else None) == entry


@pytest.mark.parametrize("text,entry", [
    ("pydantic.error_wrappers.ValidationError: 3 validation errors for DeepSpeedZeroConfig", True),
    ("[rank1]: pydantic_core._pydantic_core.ValidationError: 1 validation error for DeepSpeedInferenceConfig", True),
    ("pydantic.error_wrappers.ValidationError: 2 validation errors for DeepSpeedActivationCheckpointingConfig", True),
    ("pydantic_core._pydantic_core.ValidationError: 1 validation error for TrainingConfig", False),
    ("ValueError: DeepSpeed config: train_batch_size is not equal to micro_batch * grad_acc * world_size", False),
])
def test_deepspeeds_config_models_reject_the_config(text, entry):
    from ncclscope.detectors.catalogue import classify

    k = classify(text)
    assert (k is not None and k.id == "deepspeed-config-rejected") is entry
