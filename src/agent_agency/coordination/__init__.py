"""MassGen-style team coordination (parallel answers, votes, restarts): not built yet."""
