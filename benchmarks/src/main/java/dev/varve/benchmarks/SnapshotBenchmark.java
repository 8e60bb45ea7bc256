package dev.varve.benchmarks;

import dev.varve.config.ConfigLimits;
import dev.varve.config.VarveConfig;
import dev.varve.config.WalSyncMode;
import dev.varve.engine.SnapshotInfo;
import dev.varve.engine.SnapshotView;
import dev.varve.engine.Table;
import dev.varve.engine.Varve;
import dev.varve.engine.WriteBatch;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Threads;
import org.openjdk.jmh.annotations.Warmup;

/**
 * Split snapshots (Retro) against the current state, over {@value #KEYS} resident 8-byte keys with
 * {@value #VALUE_BYTES}-byte values, one thread:
 * <ul>
 *   <li>{@link #update}: one op is one atomic batch of {@value #BATCH} random overwrites; with
 *       {@code snapshotEvery=1} a snapshot is declared after every batch (in the batch's commit: {@code writeAndSnapshot}), so every page a batch touches is captured
 *       (pre-state copied, archived to the Pagelog, mapped in the Maplog) by the next batch; {@code 0} declares none.
 *       Retro measured about 4% worst-case overhead.</li>
 *   <li>{@link #currentRead} vs {@link #asOfRead}: random point reads from the current state vs from one
 *       {@link SnapshotView} opened per trial. {@code pages=shared}: the snapshot was declared and nothing changed, so
 *       every page is still shared with the current state; {@code pages=archived}: after the declaration every key
 *       was overwritten and a checkpoint made the archive durable, so every leaf the view reads comes from the
 *       Pagelog. Retro: as-of reads 1.6x (shared) and 2.7x (archived) slower than current reads.</li>
 * </ul>
 * Each trial opens its own store in a temp directory, preloads every key and checkpoints, as {@link PutGetBenchmark}
 * does.
 */
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(value = 1, jvmArgsAppend = {"-Xms1g", "-Xmx1g", "-XX:MaxDirectMemorySize=2g"})
@Threads(1)
public class SnapshotBenchmark {
    static final int KEYS = 100_000;
    static final int VALUE_BYTES = 100;
    static final int BATCH = 10;
    static final String TABLE = "kv";
    /** 100k entries of 8 + 100 bytes take about 20 MiB of B+tree pages: all resident. */
    static final long REGION_BYTES = 256L << 20;

    /** A store with {@link #KEYS} keys, preloaded and checkpointed. */
    abstract static class StoreState {
        Path dir;
        Varve store;
        Table current;
        final SplittableRandom random = new SplittableRandom(42);

        void open(String prefix, WalSyncMode sync, int diffChain) throws IOException {
            dir = Files.createTempDirectory(prefix);
            store = Varve.open(VarveConfig.builder().path(dir).dataRegionSize(REGION_BYTES).walSyncMode(sync).snapshotDiffChain(diffChain).build());
            current = store.table(TABLE);
            writeAll(0);
            store.checkpoint().join();
        }

        /** Puts every key, key {@code id} getting value {@code id + generation * KEYS}. */
        void writeAll(long generation) {
            Preload.keys(store, TABLE, KEYS, VALUE_BYTES, generation * KEYS);
        }

        void closeStore() throws IOException {
            try {
                if (store != null) store.close();
            } finally {
                StoreDirs.delete(dir);
            }
        }

        static String mib(long bytes) {
            return String.format("%.1f MiB", bytes / 1048576.0);
        }
    }

    @State(Scope.Benchmark)
    public static class UpdateState extends StoreState {
        /** 0: no snapshots; n: a snapshot declared after every n-th batch. */
        @Param({"0", "1"})
        public int snapshotEvery;

        /**
         * LOG_ONLY: the baseline is memory speed, so each batch's captured pages (~4 KiB each, one per put here)
         * dominate; FSYNC: commits wait for the disk, as in Retro's measurements.
         */
        @Param({"LOG_ONLY", "FSYNC"})
        public WalSyncMode walSyncMode;

        /** Diff capture's chain bound: the default, or 0 (every pre-state a whole page: the archive before diff capture). */
        @Param({"" + ConfigLimits.SNAPSHOT_DIFF_CHAIN_DEFAULT, "0"}) // the constant, not a copy of it that goes stale
        public int snapshotDiffChain;

        final byte[][] values = new byte[BATCH][VALUE_BYTES];
        long batches;
        long walBefore;

        @Setup(Level.Trial)
        public void setup() throws IOException {
            open("varve-snapupdate-", walSyncMode, snapshotDiffChain);
            for (int i = 0; i < BATCH; i++) Values.fill(values[i], i);
            walBefore = store.metrics().walBytesWritten();
        }

        @TearDown(Level.Trial)
        public void tearDown() throws IOException {
            try {
                System.out.printf("%n[update snapshotEvery=%d %s diffChain=%d] batches=%d snapshots=%d archive=%s wal=%s throttled=%d ms%n", snapshotEvery, walSyncMode, snapshotDiffChain, batches,
                        store.snapshots().size(), mib(store.metrics().archiveBytes()), mib(store.metrics().walBytesWritten() - walBefore),
                        TimeUnit.NANOSECONDS.toMillis(store.metrics().throttledNanos()));
            } finally {
                closeStore();
            }
        }
    }

    @State(Scope.Benchmark)
    public static class ReadState extends StoreState {
        /** shared: nothing changed since the declaration; archived: every key overwritten since (every leaf captured). */
        @Param({"shared", "archived"})
        public String pages;

        SnapshotView view;
        Table asOf;

        @Setup(Level.Trial)
        public void setup() throws IOException {
            open("varve-snapread-", WalSyncMode.LOG_ONLY, ConfigLimits.SNAPSHOT_DIFF_CHAIN_DEFAULT);
            long id = store.snapshotNow();
            boolean archived;
            switch (pages) {
                case "shared" -> archived = false;
                case "archived" -> archived = true;
                default -> throw new IllegalArgumentException("pages must be shared or archived, was " + pages);
            }
            if (archived) {
                writeAll(1);
                store.checkpoint().join(); // the archiver has caught up with the mark: every pre-state is in the Pagelog
            }
            view = store.asOf(id);
            asOf = view.table(TABLE);
            // both sides serve what they should, before anything is timed
            SplittableRandom check = new SplittableRandom(7);
            for (int i = 0; i < 2_000; i++) {
                long k = check.nextInt(KEYS);
                if (!Arrays.equals(asOf.get(Keys.of(k)), Values.of(k, VALUE_BYTES)))
                    throw new IllegalStateException("as-of value of key " + k + " is wrong");
                if (!Arrays.equals(current.get(Keys.of(k)), Values.of(k + (archived ? KEYS : 0), VALUE_BYTES)))
                    throw new IllegalStateException("current value of key " + k + " is wrong");
            }
            long archiveBytes = 0;
            for (SnapshotInfo s : store.snapshots()) if (s.id() == id) archiveBytes = s.archiveBytes();
            System.out.printf("%n[read pages=%s] snapshot %d holds %s of archived pre-states (%d pages of 4 KiB + headers)%n", pages, id,
                    mib(archiveBytes), archiveBytes / (store.config().pageSize() + 24 + 32));
        }

        @TearDown(Level.Trial)
        public void tearDown() throws IOException {
            try {
                if (view != null) view.close();
            } finally {
                closeStore();
            }
        }

        byte[] get(Table t) {
            long id = random.nextInt(KEYS);
            byte[] v = t.get(Keys.of(id));
            if (v == null) throw new IllegalStateException("key " + id + " is missing");
            return v;
        }
    }

    /** One batch of {@value #BATCH} random overwrites, then (snapshotEvery permitting) a snapshot declaration. */
    @Benchmark
    public void update(UpdateState s) {
        byte[][] values = s.values;
        long[] ids = new long[BATCH];
        for (int i = 0; i < BATCH; i++) {
            ids[i] = s.random.nextInt(KEYS);
            values[i][0]++; // a different value each time; the rest stays
        }
        Consumer<WriteBatch> batch = b -> {
            for (int i = 0; i < BATCH; i++) b.put(TABLE, Keys.of(ids[i]), values[i]);
        };
        s.batches++;
        if (s.snapshotEvery > 0 && s.batches % s.snapshotEvery == 0) s.store.writeAndSnapshot(batch); // one commit for both
        else s.store.write(batch);
    }

    @Benchmark
    public byte[] currentRead(ReadState s) {
        return s.get(s.current);
    }

    @Benchmark
    public byte[] asOfRead(ReadState s) {
        return s.get(s.asOf);
    }
}
