package dev.varve.benchmarks;

import dev.varve.config.RecoveryMode;
import dev.varve.config.VarveConfig;
import dev.varve.config.WalSyncMode;
import dev.varve.engine.Table;

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
import org.openjdk.jmh.annotations.Threads;
import org.openjdk.jmh.annotations.Warmup;

/**
 * Random puts (overwrites, each with one of {@link #VALUE_POOL} text-like values) and random gets of 100-byte values
 * over {@link #keys} 8-byte keys, with 1 and 2 threads.
 * The trial setup preloads every key and checkpoints, so the data is resident in a data region sized to hold it
 * ({@link #REGION_BYTES}, off-heap; the heap holds no data) and measurement starts from a clean region.
 */
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(value = 1, jvmArgsAppend = {"-Xms1g", "-Xmx1g", "-XX:MaxDirectMemorySize=2g"})
@State(Scope.Benchmark)
public class PutGetBenchmark {
    static final int VALUE_BYTES = 100;
    /** Values a client's puts draw from. */
    static final int VALUE_POOL = 1024;
    /** 1M entries of 8 + 100 bytes take about 170 MiB of B+tree pages; room to spare for splits and the checkpoint. */
    static final long REGION_BYTES = 512L << 20;
    static final String TABLE = "kv";

    @Param("1000000")
    public int keys;

    @Param("CHECKPOINT_RECOVERY_FILE")
    public RecoveryMode recoveryMode;

    @Param("LOG_ONLY")
    public WalSyncMode walSyncMode;

    private PreloadedStore preloaded;
    private Table table;

    /** Per-thread randomness and the values its puts draw from. */
    @State(Scope.Thread)
    public static class Client {
        final SplittableRandom random = new SplittableRandom(Thread.currentThread().getId());
        /** Text-like values, as {@code --compare} puts: a page of them compresses as real records do, not as zeros. */
        final byte[][] values = Values.textPool(VALUE_POOL, VALUE_BYTES, VALUE_BYTES, Thread.currentThread().getId());

        long nextId(int bound) {
            return random.nextInt(bound);
        }
    }

    @Setup(Level.Trial)
    public void openAndPreload() throws IOException {
        preloaded = PreloadedStore.open("varve-putget-", VarveConfig.builder().dataRegionSize(REGION_BYTES).recoveryMode(recoveryMode)
                .walSyncMode(walSyncMode), TABLE, keys, VALUE_BYTES);
        table = preloaded.store().table(TABLE);
    }

    @TearDown(Level.Trial)
    public void close() throws IOException {
        preloaded.close();
    }

    @Benchmark
    @Threads(1)
    public void put(Client c) {
        doPut(c);
    }

    @Benchmark
    @Threads(2)
    public void put2Threads(Client c) {
        doPut(c);
    }

    @Benchmark
    @Threads(1)
    public byte[] get(Client c) {
        return doGet(c);
    }

    @Benchmark
    @Threads(2)
    public byte[] get2Threads(Client c) {
        return doGet(c);
    }

    private void doPut(Client c) {
        long id = c.nextId(keys);
        table.put(Keys.of(id), c.values[c.random.nextInt(VALUE_POOL)]); // an overwrite changes the value
    }

    private byte[] doGet(Client c) {
        long id = c.nextId(keys);
        byte[] v = table.get(Keys.of(id));
        if (v == null) throw new IllegalStateException("key " + id + " is missing");
        return v;
    }
}
