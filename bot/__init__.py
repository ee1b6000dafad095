"""rltracker's I/O shell around the pure analyzers.

Layers, from the top; a module imports only from layers below it (import-linter checks it,
see pyproject.toml):

    cli                     the `rltracker` command
    server                  `rltracker serve`: app + worker + scheduler in one process
    app | scheduler         the aiohttp app assembled; the nightly jobs
    webhooks | site         receiving GitHub; pages, API and report
    pipeline                a thread changed: analyse, store, let speaking decide
    speaking                what the app says on threads, and how it decides
    github                  the GitHub client, sync, recovery, paper import
    context                 settings + database + client, and the app keys
    store                   SQLAlchemy models and repository functions
    templating | logs | metrics | command_syntax   (how a `/rltracker` command is written)
    config                  settings read from the environment
"""
