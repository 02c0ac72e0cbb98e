"""The deployment files docs/deploy.md hands an instructor, checked offline: every key of the Zero
to JupyterHub values that configures a Python class is a configurable trait of that class (the
chart's own values.schema.json is not published on PyPI or npm, the registries reachable here)."""

from __future__ import annotations

from pathlib import Path

import yaml
from jupyterhub.app import JupyterHub
from jupyterhub.auth import Authenticator
from kubespawner import KubeSpawner
from oauthenticator.github import GitHubOAuthenticator

DEPLOY = Path(__file__).resolve().parents[2] / "docs" / "deploy"
VALUES = yaml.safe_load((DEPLOY / "z2jh-values.yaml").read_text(encoding="utf-8"))
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
