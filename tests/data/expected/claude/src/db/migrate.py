"""Database migrations, applied in file-name order."""

from pathlib import Path


class MigrationRunner:
    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def pending(self, applied: set[str]) -> list[Path]:
        return [p for p in sorted(self.folder.glob("*.sql")) if p.name not in applied]


def run_migrations(folder: Path, applied: set[str]) -> list[str]:
    runner = MigrationRunner(folder)
    return [p.name for p in runner.pending(applied)]
