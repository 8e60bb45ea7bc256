package dev.varve.benchmarks;

import dev.varve.config.VarveConfig;
import dev.varve.config.WalSyncMode;
import dev.varve.engine.Table;
import dev.varve.engine.Varve;
import dev.varve.engine.VarveMetrics;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

import org.openjdk.jmh.annotations.AuxCounters;
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
 * The IEP-113 comparison under JMH: puts of monotonically increasing keys with 100..300-byte values in each
 * {@link RecoverySetup}, with a checkpoint every {@link #checkpointMillis} ms so that checkpoints run during
 * measurement. Besides puts/s, {@link Counters} reports per iteration what the store wrote and how long its
 * checkpoints took (JMH "events": totals per iteration, not rates).
 */
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(value = 1, jvmArgsAppend = {"-Xms1g", "-Xmx1g", "-XX:MaxDirectMemorySize=2g"})
@Threads(1)
@State(Scope.Benchmark)
public class RecoveryModeBenchmark {
    static final String TABLE = "load";

    @Param({"WAL_PHYSICAL", "RECOVERY_FILE_DISABLED", "RECOVERY_FILE_SKIP_GARBAGE", "RECOVERY_FILE_SNAPPY"})
    public RecoverySetup setup;

    @Param("1000")
    public int checkpointMillis;

    @Param("LOG_ONLY")
    public WalSyncMode walSyncMode;

    private Path dir;
    private Varve store;
    private Table table;
    private UniquePutLoad load;
    private CheckpointTally tally;

    @Setup(Level.Trial)
    public void open() throws IOException {
        dir = Files.createTempDirectory("varve-recovery-mode-");
        store = Varve.open(setup.applyTo(VarveConfig.builder().path(dir)).walSyncMode(walSyncMode)
                .checkpointFrequency(Duration.ofMillis(checkpointMillis)).build());
        table = store.table(TABLE);
        load = new UniquePutLoad(0, 42);
        tally = new CheckpointTally(store.metrics());
    }

    @TearDown(Level.Trial)
    public void close() throws IOException {
        try {
            tally.close();
            store.close();
        } finally {
            StoreDirs.delete(dir);
        }
    }

    /** Per-iteration totals from {@link VarveMetrics} deltas and the {@link CheckpointTally}; times in ms. */
    @AuxCounters(AuxCounters.Type.EVENTS)
    @State(Scope.Thread)
    public static class Counters {
        public long walBytes;
        public long recoveryFileBytes;
        public long checkpoints;
        public long checkpointPages;
        public double checkpointTotalMs;
        public double checkpointRecoveryDataMs;
        public double checkpointPageWriteMs;
        public double checkpointFsyncMs;
        public double throttledMs;

        private long wal0;
        private long rf0;
        private long pages0;
        private long throttled0;
        private CheckpointTally.Totals cp0;

        @Setup(Level.Iteration)
        public void begin(RecoveryModeBenchmark b) {
            VarveMetrics m = b.store.metrics();
            wal0 = m.walBytesWritten();
            rf0 = m.recoveryFileBytesWritten();
            pages0 = m.checkpointPagesWritten();
            throttled0 = m.throttledNanos();
            cp0 = b.tally.totals();
        }

        @TearDown(Level.Iteration)
        public void end(RecoveryModeBenchmark b) {
            VarveMetrics m = b.store.metrics();
            CheckpointTally.Totals cp = b.tally.totals().minus(cp0);
            walBytes = m.walBytesWritten() - wal0;
            recoveryFileBytes = m.recoveryFileBytesWritten() - rf0;
            checkpointPages = m.checkpointPagesWritten() - pages0;
            throttledMs = (m.throttledNanos() - throttled0) / 1e6;
            checkpoints = cp.checkpoints();
            checkpointTotalMs = cp.totalNanos() / 1e6;
            checkpointRecoveryDataMs = cp.recoveryDataNanos() / 1e6;
            checkpointPageWriteMs = cp.pageWriteNanos() / 1e6;
            checkpointFsyncMs = cp.fsyncNanos() / 1e6;
        }
    }

    @Benchmark
    public long put(Counters c) {
        return load.putNext(table);
    }
}
