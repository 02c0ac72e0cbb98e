"""gpudojo-class: a JupyterHub service that shows an instructor the class.

It lists the hub's users (its own token: list:users, read:users, access:servers), asks each
running server for GET gpudojo/api/course/summary through the proxy, a bounded number at a time
and each within a timeout, and shows the answers per learner and per item as an HTML table, JSON
and CSV. Users reach it only with access:services!service=gpudojo-class, which the hub's config
grants through a role (docs/class-service.md). No shared database, no file access across users.
"""
