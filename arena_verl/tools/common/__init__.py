"""What several ``arena-verl`` commands share, so that no command imports another: the supervisor of a child
process, the flags, the resumable JSON-lines file, the offline judge runs, a dump's groups as the offline judges see
them, the HTML report's page and plots. A module here imports no command (the tool-boundary test checks it)."""
