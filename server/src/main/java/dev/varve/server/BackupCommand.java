package dev.varve.server;

import dev.varve.config.RecoveryMode;

import java.io.PrintStream;
import java.nio.file.Path;
import java.util.Locale;
import java.util.Set;

/**
 * {@code backup --from HOST:PORT --as-of ID --to NEWDIR [--recovery-mode MODE]}: pulls snapshot ID of a served store
 * into NEWDIR as an ordinary store (see {@link SnapshotBackup}). Prints progress lines on {@code out}; a failed backup
 * leaves NEWDIR marked unfinished and exits 1, and running the same command again completes it.
 */
final class BackupCommand {
    static final String USAGE = "backup --from HOST:PORT --as-of ID --to NEWDIR [--recovery-mode CHECKPOINT_RECOVERY_FILE|WAL_PHYSICAL]";
    /** A progress line every this many bytes. */
    private static final long PROGRESS_EVERY_BYTES = 16L << 20;

    private BackupCommand() {
    }

    static int run(String[] args, PrintStream out) {
        CommandArgs a = new CommandArgs(args, 1, Set.of("--from", "--as-of", "--to", "--recovery-mode"), Set.of("--follow"));
        if (!a.positional().isEmpty()) throw new IllegalArgumentException("backup takes no positional arguments, got " + a.positional());
        if (a.flag("--follow")) throw new IllegalArgumentException("--follow (streaming the WAL after the image) is not built yet");
        SnapshotBackup backup = new SnapshotBackup(CommandArgs.hostPort("--from", a.required("--from")),
                CommandArgs.parseLong("--as-of", a.required("--as-of")), Path.of(a.required("--to")));
        if (a.get("--recovery-mode") != null) {
            try {
                backup.recoveryMode(RecoveryMode.valueOf(a.get("--recovery-mode").toUpperCase(Locale.ROOT)));
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException("--recovery-mode must be CHECKPOINT_RECOVERY_FILE or WAL_PHYSICAL, was " + a.get("--recovery-mode"));
            }
        }
        long[] nextReport = {PROGRESS_EVERY_BYTES};
        backup.progress((entries, bytes) -> {
            if (bytes >= nextReport[0]) {
                out.println("received " + entries + " entries, " + (bytes >> 20) + " MiB");
                out.flush();
                nextReport[0] = bytes + PROGRESS_EVERY_BYTES;
            }
        });
        BackupResult r = backup.run();
        out.printf(Locale.ROOT, "backup of snapshot %d complete: %s holds %d tables, %d entries, %d bytes (%.1f s)%n", r.snapshotId(), r.target(),
                r.tables(), r.entries(), r.bytes(), r.nanos() / 1e9);
        return 0;
    }
}
