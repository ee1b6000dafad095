"""What the app says on threads, and how it decides.

The path of one comment, in import order from the top: `decide.act` (the pipeline's entry
point) -> `failure_comment` / `rule_summary` (what to say) -> `posting` (read the thread live,
post or adopt our own comment) -> `claims` (the once-only slot and the daily budget) ->
`situation` (the thread, its repository, earlier proposals) -> `quiet` (pure rules for when to
stay quiet) -> `records` (Action rows). Beside them: `render` (Markdown from
templates/comments), `repo_config` (.github/rltracker.yml), `contribution` (contribution-rule
summaries), `reception` (reactions to our comments, auto-pause) and `preview` (what the app
would say on a newly installed repository).

May import: bot.github, bot.context, bot.store, the foundation modules and analyzers. Never
bot.pipeline or anything above it.
"""
