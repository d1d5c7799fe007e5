"""``python -m hybridai`` runs the command-line interface."""

from hybridai.cli import main

raise SystemExit(main())
