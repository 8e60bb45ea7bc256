package dev.varve.cli;

import dev.varve.config.RankTreePolicy;
import dev.varve.config.RecoveryMode;
import dev.varve.config.VarveConfig;
import dev.varve.server.BackupException;
import dev.varve.server.BackupResult;
import dev.varve.server.ShipProgress;
import dev.varve.server.SnapshotBackup;

import java.io.PrintWriter;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * {@code varve backup --from}: runs a {@link SnapshotBackup} with progress lines on standard output, and in follow
 * mode stops it cleanly on SIGTERM or Ctrl-C (the standby is closed before the JVM goes). A transfer that fails is an
 * unusable-store exit (2) with the reason; the target stays marked unfinished once part of the image was written, and
 * is removed when nothing was and this run created it.
 */
final class RemoteBackup {
    /** A progress line every this many bytes of the image. */
    private static final long PROGRESS_EVERY_BYTES = 16L << 20;

    private final SnapshotBackup backup;
    private final OutputOptions output;

    RemoteBackup(InetSocketAddress from, Long asOf, Path to, RecoveryMode recoveryMode, RankTreePolicy retention, TransferLimits limits,
                 OutputOptions output) {
        // follow mode ignores the id: the server declares the image's snapshot
        this.backup = new SnapshotBackup(from, asOf == null ? 1 : asOf, to);
        if (recoveryMode != null) backup.recoveryMode(recoveryMode);
        if (retention != null) backup.retention(retention);
        limits.applyTo(backup);
        this.output = output;
    }

    /** HOST:PORT, with the port in 1..65535. */
    static InetSocketAddress hostPort(String text) {
        int colon = text.lastIndexOf(':');
        if (colon <= 0 || colon == text.length() - 1) throw new IllegalArgumentException("--from must be HOST:PORT, was " + text);
        int port;
        try {
            port = Integer.parseInt(text.substring(colon + 1));
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("--from port is not a number: " + text);
        }
        if (port < 1 || port > 65535) throw new IllegalArgumentException("--from port must be 1..65535, was " + port);
        String host = text.substring(0, colon);
        if (host.startsWith("[") && host.endsWith("]")) host = host.substring(1, host.length() - 1);
        return new InetSocketAddress(host, port);
    }

    int run(boolean follow) {
        Progress progress = new Progress(output.json ? output.err() : output.out()); // --json: stdout holds the object alone
        backup.follow(follow).progress(progress);
        CountDownLatch closed = new CountDownLatch(1);
        Thread hook = new Thread(() -> {
            backup.stop();
            try {
                closed.await(30, TimeUnit.SECONDS); // let run() close the standby cleanly before the JVM goes
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }, "varve-backup-stop");
        if (follow) Runtime.getRuntime().addShutdownHook(hook);
        try {
            output.print(report(backup.run(), follow, progress.standby));
            return Main.OK;
        } catch (BackupException e) { // it says what the target holds now: unfinished, or as it was
            throw new UnusableStoreException(e.getMessage(), e);
        } finally {
            // after the report: once the hook returns the JVM halts, and a follow SIGTERM stopped ended without it
            closed.countDown();
            if (follow) removeHook(hook);
        }
    }

    /** The report at the end; a follow's names the settings its standby opens with, where an operator who stopped it looks. */
    private static Map<String, Object> report(BackupResult r, boolean follow, VarveConfig standby) {
        Map<String, Object> report = new LinkedHashMap<>();
        report.put("store", r.target().toString());
        report.put(follow ? "imageOfSnapshot" : "asOf", r.snapshotId());
        report.put("tables", r.tables());
        report.put("entries", r.entries());
        report.put("bytes", r.bytes());
        report.put(follow ? "imageSeconds" : "seconds", Math.round(r.nanos() / 1e8) / 10.0); // a follow's image, not the follow
        if (follow) report.put("writesFollowed", r.writesFollowed());
        if (standby != null) report.put("opensWith", opensWith(standby));
        return report;
    }

    /**
     * The settings a standby is opened with: its page size and partitions are the sender's, its data region and WAL
     * segments at least the sender's. The WAL keeps its segment size (open refuses another), and a batch the sender
     * took needs that data region: neither can be left to the defaults when the sender's were larger.
     */
    private static Map<String, Object> opensWith(VarveConfig standby) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("pageSize", standby.pageSize());
        m.put("partitions", standby.partitions());
        m.put("walSegmentSize", standby.walSegmentSize());
        m.put("dataRegionSize", standby.dataRegionSize());
        return m;
    }

    private static void removeHook(Thread hook) {
        try {
            Runtime.getRuntime().removeShutdownHook(hook);
        } catch (IllegalStateException shuttingDown) {
            // the hook is what stopped the follow: it is running
        }
    }

    /**
     * Progress lines: every 16 MiB of the image, the image in place and the settings its standby opens with, each
     * server snapshot the standby received.
     */
    private static final class Progress implements ShipProgress {
        private final PrintWriter out;
        private long nextReport = PROGRESS_EVERY_BYTES;
        private long latestSnapshot;
        /** The standby's configuration once the image is in place (follow mode); set on the applier thread before run returns. */
        private volatile VarveConfig standby;

        Progress(PrintWriter out) {
            this.out = out;
        }

        @Override
        public void received(long pages, long imagePages, long bytes) {
            if (bytes < nextReport) return;
            print("received " + pages + " of " + imagePages + " pages, " + (bytes >> 20) + " MiB");
            nextReport = bytes + PROGRESS_EVERY_BYTES;
        }

        @Override
        public void imageComplete(BackupResult image, VarveConfig config) {
            standby = config;
            print(String.format(Locale.ROOT, "image of snapshot %d complete: %d tables, %d entries; following its changes (stop with Ctrl-C)",
                    image.snapshotId(), image.tables(), image.entries()));
            StringBuilder line = new StringBuilder("standby " + image.target() + " opens with");
            String sep = " ";
            for (Map.Entry<String, Object> e : opensWith(config).entrySet()) {
                line.append(sep).append(e.getKey()).append('=').append(e.getValue());
                sep = ", ";
            }
            print(line.toString());
        }

        @Override
        public void followed(long writesApplied, long latestServerSnapshot) {
            if (latestServerSnapshot == latestSnapshot) return;
            latestSnapshot = latestServerSnapshot;
            print("standby holds server snapshot " + latestServerSnapshot + " (" + writesApplied + " writes followed)");
        }

        private void print(String line) {
            out.println(line);
            out.flush();
        }
    }
}
