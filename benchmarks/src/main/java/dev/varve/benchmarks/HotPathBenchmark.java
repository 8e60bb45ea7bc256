package dev.varve.benchmarks;

import dev.varve.config.RankTreePolicy;
import dev.varve.config.RecoveryCompression;
import dev.varve.config.RecoveryMode;
import dev.varve.config.Retention;
import dev.varve.config.VarveConfig;
import dev.varve.config.WalSyncMode;
import dev.varve.engine.Cursor;
import dev.varve.engine.Varve;

import java.io.IOException;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;

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
import org.openjdk.jmh.annotations.Warmup;
import org.openjdk.jmh.infra.Blackhole;

/**
 * The hot paths PutGetBenchmark does not cover — a range scan of 100 entries, an atomic batch across two tables,
 * and a snapshot declaration — over {@link #keys} preloaded keys, with every knob of the store as a parameter
 * (threads with JMH's {@code -t}). Values are {@link #valueBytes} long.
 */
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Warmup(iterations = 2, time = 2)
@Measurement(iterations = 3, time = 2)
@Fork(value = 1, jvmArgsAppend = {"-Xms1g", "-Xmx1g", "-XX:MaxDirectMemorySize=2g"})
@State(Scope.Benchmark)
public class HotPathBenchmark {
    static final String TABLE = "kv";
    static final String OTHER = "audit";
    private static final int SCAN_ENTRIES = 100;
    private static final int BATCH_PUTS = 10;

    @Param("200000")
    public int keys;

    @Param({"100", "1000"})
    public int valueBytes;

    @Param("CHECKPOINT_RECOVERY_FILE")
    public RecoveryMode recoveryMode;

    @Param("SNAPPY")
    public RecoveryCompression compression;

    @Param("LOG_ONLY")
    public WalSyncMode walSyncMode;

    private PreloadedStore preloaded;
    private Varve store;

    /** Per-thread randomness and value buffer. */
    @State(Scope.Thread)
    public static class Client {
        final SplittableRandom random = new SplittableRandom(Thread.currentThread().getId());
        byte[] value;

        @Setup(Level.Trial)
        public void values(HotPathBenchmark b) {
            value = Values.of(Thread.currentThread().getId(), b.valueBytes);
        }
    }

    @Setup(Level.Trial)
    public void openAndPreload() throws IOException {
        preloaded = PreloadedStore.open("varve-hotpath-", VarveConfig.builder().dataRegionSize(1L << 30).recoveryMode(recoveryMode)
                .recoveryCompression(compression).walSyncMode(walSyncMode)
                .retention(RankTreePolicy.levels(Retention.keepLast(1000))), TABLE, keys, valueBytes); // steady state for snapshotNow
        store = preloaded.store();
    }

    @TearDown(Level.Trial)
    public void close() throws IOException {
        preloaded.close();
    }

    /** 100 entries in key order from a random key (merged over the table's partitions). */
    @Benchmark
    public void scan100(Client c, Blackhole bh) {
        try (Cursor cursor = store.table(TABLE).scan(Keys.of(c.random.nextInt(keys)), null)) {
            for (int i = 0; i < SCAN_ENTRIES && cursor.next(); i++) bh.consume(cursor.value());
        }
    }

    /** One atomic batch: 10 overwrites of random keys, and one audit entry in a second table. */
    @Benchmark
    public void batchWrite(Client c) {
        long audit = c.random.nextLong();
        store.write(b -> {
            for (int i = 0; i < BATCH_PUTS; i++) b.put(TABLE, Keys.of(c.random.nextInt(keys)), c.value);
            b.put(OTHER, Keys.of(audit), c.value);
        });
    }

    /** One snapshot declaration (snaprec appended under the checkpoint lock, committed as walSyncMode says). */
    @Benchmark
    public long snapshotNow() {
        return store.snapshotNow();
    }
}
