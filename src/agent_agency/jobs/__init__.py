"""Scheduled work: the daily and weekly jobs (`agency jobs run daily|weekly`)."""
