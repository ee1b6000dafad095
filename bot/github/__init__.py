"""Talking to the outside world: GitHub and arXiv.

Owns the one GitHub client (`client`: app JWT, installation tokens, REST and GraphQL,
retries, ETags), the GraphQL documents (`queries`), the backfill and incremental sync of the
tracked repositories (`sync`), recovery of missed webhook deliveries (`recovery`) and the
paper pool's import and arXiv listing (`papers`).

May import: bot.context, bot.store and the foundation modules. Never what speaks, receives
or serves pages.
"""
