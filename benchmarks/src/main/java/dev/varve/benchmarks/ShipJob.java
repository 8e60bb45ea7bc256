package dev.varve.benchmarks;

import dev.varve.config.ConfigLimits;
import dev.varve.config.VarveConfig;
import dev.varve.engine.Table;
import dev.varve.engine.Varve;
import dev.varve.engine.VarveMetrics;
import dev.varve.server.BackupResult;
import dev.varve.server.SnapshotBackup;
import dev.varve.server.VarveServer;

import java.io.IOException;
import java.io.PrintStream;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.ToDoubleFunction;
import java.util.stream.Collectors;

/**
 * {@code --ship}: snapshot shipping on loopback, in one run and on one disk. Warms the shipping code up with small
 * transfers of a store of its own, loads an image of {@code --ship-mib} MiB (8 KiB values, so every value has an
 * overflow page), declares a snapshot, then measures, one after another:
 * <ol>
 *   <li>the disk's durable sequential write bandwidth: a file as large as the image (at most 1 GiB) written in
 *       1 MiB pieces and fsynced, {@value #DISK_PROBES} times (the fractions below are of their median);</li>
 *   <li>a writer's put rate (1 KiB values over 200,000 keys, full speed) for {@code --seconds} without a transfer,
 *       after as long a run of the same writer untimed;</li>
 *   <li>{@value #TRANSFERS} transfers, one after another ({@link SnapshotBackup} from a {@link VarveServer} on
 *       loopback into a new directory on the same disk) while the same writer runs: for each, the snapshot's page
 *       bytes (what is shipped and written) and its key and value bytes per second of the whole transfer (its final
 *       fsync, open and check included), and the writer's put rate meanwhile; and the median of each figure. A
 *       single transfer moved with how much the JIT compiler still had to do during it (0.2-1.7 s of compiling in a
 *       transfer of 1.3-3.9 s, after the warm-up).</li>
 * </ol>
 * Sender and receiver share the machine's cores and disk, as a backup onto the same host would; so that a run says
 * which of the two held the transfer back, it also reports the process's CPU (cores busy) and the source store's own
 * disk writes (WAL, recovery files, checkpoint pages, archive) with the writer alone and during the transfer. With
 * {@code --ship-idle} no writer runs: the transfer alone.
 */
final class ShipJob {
    private static final int IMAGE_VALUE_BYTES = 8 << 10;
    private static final int WRITER_VALUE_BYTES = 1 << 10;
    private static final int WRITER_KEYS = 200_000;
    private static final int BASELINE_SECONDS_DEFAULT = 10;
    /** The warm-up's image, or the measured image where that is smaller. */
    private static final int WARM_UP_MIB = 64;
    private static final int WARM_UP_TRANSFERS = 5;
    private static final int CORES = Runtime.getRuntime().availableProcessors();
    /** Measured transfers of the image, one after another: the first may still pay the JIT compiler (see warmUp). */
    private static final int TRANSFERS = 3;
    /** Disk probes, whose median the fractions are of: one probe read anywhere from 473 to 1,440 MiB/s here. */
    private static final int DISK_PROBES = 3;

    private final Options opts;
    private final PrintStream out;

    ShipJob(Options opts, PrintStream out) {
        this.opts = opts;
        this.out = out;
    }

    void run() throws Exception {
        StoreDirs.wipe(opts.dir);
        long imageBytes = (long) opts.shipMiB << 20;
        out.printf(Locale.ROOT, "--ship: %d MiB image, writer %d-byte puts over %d keys, store in %s%n", opts.shipMiB, WRITER_VALUE_BYTES,
                WRITER_KEYS, opts.dir.toAbsolutePath());
        double[] probes = new double[DISK_PROBES];
        for (int i = 0; i < DISK_PROBES; i++) probes[i] = diskBandwidth(opts.dir.resolve("disk-probe"), Math.min(imageBytes, 1L << 30));
        double diskBytesPerSec = Medians.of(probes);
        out.printf(Locale.ROOT, "disk: durable sequential writes %s MiB/s, median %.0f%n",
                Arrays.stream(probes).mapToObj(b -> String.format(Locale.ROOT, "%.0f", b / (1 << 20))).collect(Collectors.joining(", ")),
                diskBytesPerSec / (1 << 20));
        VarveConfig config = opts.config(opts.dir.resolve("source")).build();
        try (Varve store = Varve.open(config)) {
            long snapshot = load(store, imageBytes);
            long imageKeyValueBytes = imageBytes / (IMAGE_VALUE_BYTES + 16) * (IMAGE_VALUE_BYTES + 16);
            int seconds = opts.secondsSet ? opts.seconds : BASELINE_SECONDS_DEFAULT;
            if (!opts.shipIdle) {
                // untimed first: the writer beside the transfer runs compiled code over keys its table holds (it ran in the
                // warm-up's transfers and in the baseline); a baseline timed cold, half inserts, came out a fifth low and
                // raised "during / without" by as much (1.19 against 0.99 on a 64 MiB image)
                out.printf(Locale.ROOT, "writer warm-up, untimed: %.0f puts/s over %d s%n", writerRate(store, seconds), seconds);
            }
            long baselineStart = System.nanoTime();
            CpuTimes baselineCpu0 = CpuTimes.now();
            long baselineDisk0 = diskWrites(store, config);
            double baseline = opts.shipIdle ? 0 : writerRate(store, seconds);
            long baselineNanos = System.nanoTime() - baselineStart;
            double baselineCores = coresBusy(CpuTimes.now().since(baselineCpu0), baselineNanos);
            double baselineDiskRate = (diskWrites(store, config) - baselineDisk0) / (baselineNanos / 1e9);
            if (!opts.shipIdle) {
                out.printf(Locale.ROOT, "writer without a transfer: %.0f puts/s over %d s, %.2f of %d cores busy, the store writing %.1f MiB/s%n",
                        baseline, seconds, baselineCores, CORES, baselineDiskRate / (1 << 20));
            }
            // right before the transfers: code that went cold during the load and the baseline is flushed from the code
            // cache and compiled again when it runs (a warm-up before them left C2 busy during the measured transfer)
            warmUp();
            List<Transfer> transfers = new ArrayList<>();
            try (VarveServer server = VarveServer.start(store, new InetSocketAddress("127.0.0.1", 0))) {
                for (int i = 0; i < TRANSFERS; i++) transfers.add(transfer(store, config, server, snapshot));
            }
            BackupResult first = transfers.get(0).result();
            out.printf(Locale.ROOT, "image: %d entries, %.0f MiB of keys and values, %.0f MiB of pages%n", first.entries(),
                    imageKeyValueBytes / (double) (1 << 20), first.bytes() / (double) (1 << 20));
            List<String> headings = new ArrayList<>();
            for (int i = 1; i <= TRANSFERS; i++) headings.add("transfer " + i);
            headings.add("median");
            TextTable t = new TextTable("snapshot shipping, " + opts.shipMiB + " MiB", headings);
            row(t, transfers, "backup directory on disk, MiB", "%.0f", x -> x.backupBytes() / (double) (1 << 20));
            row(t, transfers, "transfer time, s", "%.1f", x -> x.result().nanos() / 1e9);
            row(t, transfers, "  of which fsync, open and check, s", "%.1f", x -> x.result().verifyNanos() / 1e9);
            row(t, transfers, "transfer throughput (page bytes), MiB/s", "%.1f", x -> x.pageBytesPerSec() / (1 << 20));
            row(t, transfers, "transfer throughput (key+value bytes), MiB/s", "%.1f", x -> imageKeyValueBytes / x.resultSecs() / (1 << 20));
            row(t, transfers, "page bytes / disk bandwidth", "%.2f", x -> x.pageBytesPerSec() / diskBytesPerSec);
            row(t, transfers, "key+value bytes / disk bandwidth", "%.2f", x -> imageKeyValueBytes / x.resultSecs() / diskBytesPerSec);
            row(t, transfers, "process CPU during the transfer, cores busy", "%.2f", Transfer::cores);
            row(t, transfers, "JIT compiling during the transfer, ms", "%.0f", x -> x.jitMillis());
            row(t, transfers, "the source store's own disk writes during the transfer, MiB/s", "%.1f", x -> x.storeDiskRate() / (1 << 20));
            row(t, transfers, "(page bytes + the store's writes) / disk bandwidth", "%.2f", x -> (x.pageBytesPerSec() + x.storeDiskRate()) / diskBytesPerSec);
            if (!opts.shipIdle) {
                row(t, transfers, "writer puts/s during transfer", "%.0f", Transfer::putsPerSec);
                row(t, transfers, "during / without", "%.2f", x -> x.putsPerSec() / baseline);
            }
            t.print(out);
        }
        StoreDirs.delete(opts.dir); // the image and its backup: twice --ship-mib and more
    }

    /**
     * One measured transfer of {@code snapshot} from {@code server} into a new directory, with the writer writing to
     * {@code store} meanwhile (none with {@code --ship-idle}); the directory is deleted once measured.
     */
    private Transfer transfer(Varve store, VarveConfig config, VarveServer server, long snapshot) throws Exception {
        Path backup = opts.dir.resolve("backup");
        AtomicBoolean stop = new AtomicBoolean();
        AtomicLong puts = new AtomicLong();
        Thread writer = new Thread(() -> write(store, stop, puts), "ship-writer");
        if (!opts.shipIdle) writer.start();
        long t0 = System.nanoTime();
        CpuTimes cpu0 = CpuTimes.now();
        long disk0 = diskWrites(store, config);
        BackupResult r;
        try {
            r = new SnapshotBackup(server.address(), snapshot, backup).run();
        } finally {
            stop.set(true);
            if (!opts.shipIdle) writer.join();
        }
        long nanos = System.nanoTime() - t0;
        CpuTimes cpu = CpuTimes.now().since(cpu0);
        double secs = nanos / 1e9;
        Transfer x = new Transfer(r, coresBusy(cpu, nanos), cpu.compileMillis(), (diskWrites(store, config) - disk0) / secs, puts.get() / secs,
                StoreDirs.size(backup));
        StoreDirs.delete(backup);
        return x;
    }

    /**
     * A measured transfer: the receiver's result, the process's cores busy, the JIT compiler's milliseconds, the source
     * store's own disk writes (bytes per second) and the writer's puts per second meanwhile, the backup's size.
     */
    private record Transfer(BackupResult result, double cores, long jitMillis, double storeDiskRate, double putsPerSec, long backupBytes) {
        double resultSecs() {
            return result.nanos() / 1e9;
        }

        double pageBytesPerSec() {
            return result.bytes() / resultSecs();
        }
    }

    /** A row of one figure per transfer, and their median. */
    private static void row(TextTable t, List<Transfer> transfers, String label, String format, ToDoubleFunction<Transfer> figure) {
        double[] values = transfers.stream().mapToDouble(figure).toArray();
        List<String> cells = new ArrayList<>();
        for (double v : values) cells.add(String.format(Locale.ROOT, format, v));
        cells.add(String.format(Locale.ROOT, format, Medians.of(values)));
        t.row(label, cells);
    }

    /**
     * Ships a {@value #WARM_UP_MIB} MiB image (the measured image's size if that is smaller) {@value #WARM_UP_TRANSFERS}
     * times from a store of its own while the writer writes to it, so that the code of the measured transfer is compiled
     * before it (else the JIT compiler takes a share of the cores during it, as it would only in a process's first
     * transfer). The store's data region is a quarter of the image (at least the smallest region a store takes), so
     * most of its pages are read from their files, as in the measured transfer. A warm-up larger than the measured
     * image compiles nothing more: it only made a small {@code --ship-mib} run spend most of its time warming up.
     */
    private void warmUp() throws Exception {
        Path dir = opts.dir.resolve("warm-up");
        int mib = Math.min(WARM_UP_MIB, opts.shipMiB);
        long regionBytes = Math.max(ConfigLimits.DATA_REGION_SIZE_MIN, (long) mib << 18);
        long t0 = System.nanoTime();
        try (Varve store = Varve.open(opts.config(dir.resolve("source")).dataRegionSize(regionBytes)
                .checkpointBufferSize(regionBytes / 4).build());
             VarveServer server = VarveServer.start(store, new InetSocketAddress("127.0.0.1", 0))) {
            long snapshot = load(store, (long) mib << 20);
            AtomicBoolean stop = new AtomicBoolean();
            Thread writer = new Thread(() -> write(store, stop, new AtomicLong()), "ship-writer-warm-up");
            if (!opts.shipIdle) writer.start();
            try {
                for (int i = 0; i < WARM_UP_TRANSFERS; i++) new SnapshotBackup(server.address(), snapshot, dir.resolve("backup-" + i)).run();
            } finally {
                stop.set(true);
                if (!opts.shipIdle) writer.join();
            }
        }
        StoreDirs.delete(dir); // inside --dir, which this run wiped and marked
        out.printf(Locale.ROOT, "warm-up: %d transfers of %d MiB in %.1f s%n", WARM_UP_TRANSFERS, mib, (System.nanoTime() - t0) / 1e9);
    }

    /** Bytes per second of writing {@code bytes} to a new file in 1 MiB pieces and fsyncing it. */
    private static double diskBandwidth(Path file, long bytes) throws IOException {
        ByteBuffer chunk = ByteBuffer.allocateDirect(1 << 20);
        SplittableRandom rnd = new SplittableRandom(1);
        while (chunk.hasRemaining()) chunk.putLong(rnd.nextLong());
        long t0 = System.nanoTime();
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
            for (long written = 0; written < bytes; written += chunk.capacity()) {
                chunk.clear();
                while (chunk.hasRemaining()) ch.write(chunk);
            }
            ch.force(true);
        }
        double rate = bytes / ((System.nanoTime() - t0) / 1e9);
        Files.delete(file);
        return rate;
    }

    /** Puts {@code bytes} of 8 KiB values, declares a snapshot and checkpoints; returns the snapshot id. */
    private long load(Varve store, long bytes) {
        Table t = store.table("image");
        SplittableRandom rnd = new SplittableRandom(7);
        byte[] v = new byte[IMAGE_VALUE_BYTES];
        long t0 = System.nanoTime();
        long n = bytes / (IMAGE_VALUE_BYTES + 16);
        for (long i = 0; i < n; i++) {
            for (int j = 0; j < v.length; j += 8) {
                long r = rnd.nextLong();
                for (int b = 0; b < 8; b++) v[j + b] = (byte) (r >>> (8 * b));
            }
            t.put(String.format("image-%010d", i).getBytes(), v);
        }
        long snapshot = store.snapshotNow();
        store.checkpoint().join();
        out.printf(Locale.ROOT, "loaded %d entries in %.1f s, snapshot %d%n", n, (System.nanoTime() - t0) / 1e9, snapshot);
        return snapshot;
    }

    /**
     * The process's CPU time over a wall-clock interval, in cores: sender, receiver and writer share one JVM here, so
     * with the writer alone's figure this says how much of the machine the transfer had left (-1 where the JVM cannot
     * tell).
     */
    private static double coresBusy(CpuTimes spent, long wallNanos) {
        return spent.processNanos() < 0 ? -1 : spent.processNanos() / (double) wallNanos;
    }

    /**
     * What the source store has written to its disk so far: WAL, recovery files, checkpoint pages and archive (the
     * transfer's target is on the same disk, so these share its bandwidth with the transfer).
     */
    private static long diskWrites(Varve store, VarveConfig config) {
        VarveMetrics m = store.metrics();
        return m.walBytesWritten() + m.recoveryFileBytesWritten() + m.checkpointPagesWritten() * config.pageSize()
                + m.archiveBytes() + m.archiveBytesReclaimed();
    }

    private static double writerRate(Varve store, int seconds) throws InterruptedException {
        AtomicBoolean stop = new AtomicBoolean();
        AtomicLong puts = new AtomicLong();
        Thread writer = new Thread(() -> write(store, stop, puts), "ship-writer-baseline");
        long t0 = System.nanoTime();
        writer.start();
        Thread.sleep(seconds * 1000L);
        stop.set(true);
        writer.join();
        return puts.get() / ((System.nanoTime() - t0) / 1e9);
    }

    private static void write(Varve store, AtomicBoolean stop, AtomicLong puts) {
        Table t = store.table("live");
        SplittableRandom rnd = new SplittableRandom(11);
        byte[] v = new byte[WRITER_VALUE_BYTES];
        while (!stop.get()) {
            v[rnd.nextInt(v.length)] = (byte) rnd.nextInt();
            t.put(("live-" + rnd.nextInt(WRITER_KEYS)).getBytes(), v);
            puts.incrementAndGet();
        }
    }
}
