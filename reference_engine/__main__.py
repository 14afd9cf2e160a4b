"""``python -m reference_engine`` runs the ``dw`` command line (``dw demo`` signals this way)."""

from reference_engine.cli.main import main

if __name__ == "__main__":
    main()
