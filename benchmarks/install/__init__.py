"""Install and first-run measurements (``first_run.sh``: issue 46, results in install.md)."""
