"""The deployment files docs/deploy.md hands an instructor, checked offline: the Zero to JupyterHub
values against the chart's values schema (an extract of the newest form this project can read,
tests/data/z2jh/values.schema.extract.yaml, which says which), and every key of them that
configures a Python class against that class's configurable traits."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml
from jsonschema import Draft7Validator
from jupyterhub.app import JupyterHub
from jupyterhub.auth import Authenticator
from kubespawner import KubeSpawner
from oauthenticator.github import GitHubOAuthenticator

DEPLOY = Path(__file__).resolve().parents[2] / "docs" / "deploy"
VALUES = yaml.safe_load((DEPLOY / "z2jh-values.yaml").read_text(encoding="utf-8"))
SCHEMA = yaml.safe_load(
    (Path(__file__).resolve().parents[1] / "data" / "z2jh" / "values.schema.extract.yaml").read_text(encoding="utf-8")
)
CLASSES = {"JupyterHub": JupyterHub, "Authenticator": Authenticator, "GitHubOAuthenticator": GitHubOAuthenticator}


def test_hub_config_names_only_real_traits():
    for cls_name, options in VALUES["hub"]["config"].items():
        traits = CLASSES[cls_name].class_trait_names(config=True)
        assert set(options) <= set(traits), (cls_name, set(options) - set(traits))


def test_every_profile_override_is_a_kubespawner_trait_and_gpus_are_whole_and_requested():
    traits = set(KubeSpawner.class_trait_names(config=True))
    profiles = VALUES["singleuser"]["profileList"]
    assert sum(bool(p.get("default")) for p in profiles) == 1
    assert len({p["slug"] for p in profiles}) == len(profiles)
    gpu_kinds = set()
    for profile in profiles:
        override = profile.get("kubespawner_override", {})
        assert set(override) <= traits, (profile["slug"], set(override) - traits)
        limits = override.get("extra_resource_limits", {})
        # Extended resources cannot be overcommitted: a guarantee equal to the limit, whole units.
        assert override.get("extra_resource_guarantees", {}) == limits
        assert all(str(v).isdigit() and int(v) >= 1 for v in limits.values())
        gpu_kinds |= {k for k in limits if k.startswith("nvidia.com/")}
    assert {"nvidia.com/gpu", "nvidia.com/mig-1g.10gb"} <= gpu_kinds


def test_progress_and_runs_live_on_the_learners_volume():
    single = VALUES["singleuser"]
    # gpudojo's data dir is ~/.local/share/jupyter/gpudojo: under the persistent home mount.
    assert single["storage"]["type"] == "dynamic" and single["storage"]["homeMountPath"] == "/home/jovyan"
    assert single["defaultUrl"] == "/lab"


VALIDATOR = Draft7Validator(SCHEMA)


def schema_errors(values: dict) -> list[str]:
    errors = VALIDATOR.iter_errors(values)
    return sorted(f"{'.'.join(map(str, e.absolute_path)) or '(top)'}: {e.message}" for e in errors)


def test_the_values_pass_the_charts_values_schema():
    Draft7Validator.check_schema(SCHEMA)  # the extract is itself a valid draft 7 schema
    assert schema_errors(VALUES) == []


def _set(path: str, value):
    """The values with one key set (a dotted path), as a typo or a wrong type would."""
    values = copy.deepcopy(VALUES)
    *parents, last = path.split(".")
    node = values
    for key in parents:
        node = node[key]
    node[last] = value
    return values


@pytest.mark.parametrize(
    ("path", "value", "said"),
    [
        ("singleuser.profilelist", [], "'profilelist' was unexpected"),
        ("singleuser.storage.homeMountpath", "/home/jovyan", "'homeMountpath' was unexpected"),
        ("singleuser.storage.type", "pvc", "'pvc' is not one of"),
        ("singleuser.cpu.limit", "8 cores", "is not of type"),
        ("proxy.https.letsencrypt.email", "a@b.c", "'email' was unexpected"),
        ("cull.timeout", "1h", "is not of type"),
        ("hub.extra_config", {}, "'extra_config' was unexpected"),
        ("singleuser_image", {}, "'singleuser_image' was unexpected"),
    ],
)
def test_the_schema_check_refuses_a_misspelt_key_or_a_wrong_type(path, value, said):
    errors = schema_errors(_set(path, value))
    assert len(errors) == 1 and said in errors[0], errors
