package dev.varve.server;

import dev.varve.config.RecoveryMode;

import java.io.PrintStream;
import java.nio.file.Path;
import java.util.Locale;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * {@code backup --from HOST:PORT --as-of ID --to NEWDIR [--recovery-mode MODE]}: pulls snapshot ID of a served store
 * into NEWDIR as an ordinary store (see {@link SnapshotBackup}). Prints progress lines on {@code out}; a failed backup
 * leaves NEWDIR marked unfinished and exits 1, and running the same command again completes it.
 *
 * <p>{@code backup --from HOST:PORT --follow --to NEWDIR}: the image of a snapshot the sender declares, then its
 * changes as they commit, kept in NEWDIR as a standby (see {@link Standby}) until SIGTERM or Ctrl-C.
 */
final class BackupCommand {
    static final String USAGE = "backup --from HOST:PORT (--as-of ID | --follow) --to NEWDIR [--recovery-mode CHECKPOINT_RECOVERY_FILE|WAL_PHYSICAL]";
    /** A progress line every this many bytes. */
    private static final long PROGRESS_EVERY_BYTES = 16L << 20;

    private BackupCommand() {
    }

    static int run(String[] args, PrintStream out) {
        CommandArgs a = new CommandArgs(args, 1, Set.of("--from", "--as-of", "--to", "--recovery-mode"), Set.of("--follow"));
        if (!a.positional().isEmpty()) throw new IllegalArgumentException("backup takes no positional arguments, got " + a.positional());
        boolean follow = a.flag("--follow");
        if (follow == (a.get("--as-of") != null)) throw new IllegalArgumentException("give either --as-of ID or --follow");
        SnapshotBackup backup = new SnapshotBackup(CommandArgs.hostPort("--from", a.required("--from")),
                follow ? 1 : CommandArgs.parseLong("--as-of", a.get("--as-of")), Path.of(a.required("--to"))).follow(follow);
        if (a.get("--recovery-mode") != null) {
            try {
                backup.recoveryMode(RecoveryMode.valueOf(a.get("--recovery-mode").toUpperCase(Locale.ROOT)));
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException("--recovery-mode must be CHECKPOINT_RECOVERY_FILE or WAL_PHYSICAL, was " + a.get("--recovery-mode"));
            }
        }
        backup.progress(new Report(out));
        CountDownLatch closed = new CountDownLatch(1);
        if (follow) Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            backup.stop();
            try {
                closed.await(30, TimeUnit.SECONDS); // let run() close the standby cleanly before the JVM goes
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }, "varve-backup-stop"));
        BackupResult r;
        try {
            r = backup.run();
        } finally {
            closed.countDown();
        }
        if (follow) out.printf(Locale.ROOT, "follow stopped after %d writes; %s is a standby: open it for the latest state%n", r.writesFollowed(), r.target());
        else out.println(Report.complete(r));
        return 0;
    }

    /** Progress lines: every 16 MiB of the image, the image in place, each sender snapshot the standby received. */
    private static final class Report implements ShipProgress {
        private final PrintStream out;
        private long nextReport = PROGRESS_EVERY_BYTES;
        private long latestSnapshot;

        Report(PrintStream out) {
            this.out = out;
        }

        static String complete(BackupResult r) {
            return String.format(Locale.ROOT, "backup of snapshot %d complete: %s holds %d tables, %d entries, %d bytes (%.1f s)", r.snapshotId(),
                    r.target(), r.tables(), r.entries(), r.bytes(), r.nanos() / 1e9);
        }

        @Override
        public void received(long entries, long bytes) {
            if (bytes < nextReport) return;
            print("received " + entries + " entries, " + (bytes >> 20) + " MiB");
            nextReport = bytes + PROGRESS_EVERY_BYTES;
        }

        @Override
        public void imageComplete(BackupResult image) {
            print(complete(image) + "; following its changes (stop with Ctrl-C)");
        }

        @Override
        public void followed(long writesApplied, long latestSenderSnapshot) {
            if (latestSenderSnapshot == latestSnapshot) return;
            latestSnapshot = latestSenderSnapshot;
            print("standby holds sender snapshot " + latestSenderSnapshot + " (" + writesApplied + " writes followed)");
        }

        private void print(String line) {
            out.println(line);
            out.flush();
        }
    }
}
