"""Materialised scores, solve rates and leaderboard rows; exports, plots and measured costs."""
