"""The gpudojo-class service in a JupyterHub config (docs/class-service.md).

Load it after the hub's own config, from jupyterhub_config.py:

    load_subconfig("/path/to/jupyterhub_class_service.py")

It registers the service (started and stopped by the hub), the role that lets the service list
users and reach their servers, the `instructors` group and the role that lets that group open the
service. tests/python/test_classview_hub.py loads this very file into a real hub.

Environment, read when the hub starts:
  GPUDOJO_INSTRUCTORS      hub users to put in the instructors group (comma separated)
  GPUDOJO_CLASS_LEARNERS   a hub group: gather only its members (default: every user)
  GPUDOJO_CLASS_PROXY_URL  the proxy as the hub's machine reaches it (default http://127.0.0.1:8000,
                           JupyterHub's default bind_url)
  GPUDOJO_CLASS_URL        where the service listens (default http://127.0.0.1:10101)
"""

import os
import sys

c = get_config()  # noqa: F821 (JupyterHub's config loader defines it)

SERVICE = "gpudojo-class"
INSTRUCTORS = sorted(filter(None, os.environ.get("GPUDOJO_INSTRUCTORS", "").split(",")))
LEARNERS_GROUP = os.environ.get("GPUDOJO_CLASS_LEARNERS", "")

c.JupyterHub.services.append(
    {
        "name": SERVICE,
        "display": True,  # listed in the hub's Services menu for those who may open it
        "oauth_no_confirm": True,  # the hub's own service: no "authorize this app?" page
        "url": os.environ.get("GPUDOJO_CLASS_URL", "http://127.0.0.1:10101"),
        "command": [sys.executable, "-m", "gpudojo.classview", "--concurrency", "20", "--timeout", "5"],
        "environment": {
            "GPUDOJO_CLASS_PROXY_URL": os.environ.get("GPUDOJO_CLASS_PROXY_URL", "http://127.0.0.1:8000"),
            "GPUDOJO_CLASS_LEARNERS_GROUP": LEARNERS_GROUP,
        },
    }
)

# What the service's own token may do: list users (with their groups and whether their server
# runs) and call their servers. access:servers is the only scope that reaches a learner's
# server, and it reaches all of it; the service only ever GETs gpudojo/api/course/summary, a
# read-only route, and its token stays in the hub's process tree. It cannot be narrowed to the
# learners group: a single-user server does not resolve `access:servers!group=...` filters
# (jupyterhub.services.auth.check_scopes says so), so such a token is refused by every server.
c.JupyterHub.load_roles.append(
    {
        "name": "gpudojo-class-service",
        "description": "The gpudojo-class service: list learners and read their gpudojo progress",
        "scopes": ["list:users", "read:users", "access:servers"],
        "services": [SERVICE],
    }
)

# Who may open the class view: members of the instructors group (admins already may). Add an
# instructor with GPUDOJO_INSTRUCTORS, or in the hub's admin page (Groups), or with the hub's API.
c.JupyterHub.load_groups.update({"instructors": {"users": INSTRUCTORS}})
c.JupyterHub.load_roles.append(
    {
        "name": "gpudojo-instructor",
        "description": "Open the gpudojo class view",
        "scopes": [f"access:services!service={SERVICE}"],
        "groups": ["instructors"],
    }
)
