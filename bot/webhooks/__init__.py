"""Receiving GitHub: from `POST /webhook` to the event handlers.

Owns the `/webhook` route (`receive`: size, signature, decoding, then the inbox), the
group-commit inbox (`inbox`), the worker that takes stored deliveries in order (`worker`),
the combined gidgethub Router (`routers`) and the handlers it dispatches to: thread and
comment events (`events`), installations (`installations`), `/rltracker` commands
(`commands`); payload normalisation (`normalize`) and `rltracker replay` (`replay`).

May import: bot.pipeline and everything below it (speaking, github, context, store, the
foundation modules). Never bot.site, bot.app, bot.server, bot.scheduler or bot.cli.
"""
