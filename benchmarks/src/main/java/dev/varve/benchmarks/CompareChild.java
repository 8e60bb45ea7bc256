package dev.varve.benchmarks;

import dev.varve.config.WalSyncMode;
import org.HdrHistogram.Histogram;

import java.io.IOException;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.locks.LockSupport;

/**
 * The child JVM of {@link CompareJob}: runs one {@link CompareSetup} through an unreported warm-up and then each
 * {@link ComparePhase}, each on a fresh store in its own directory, and appends the figures to a result file as it
 * goes (see {@link PhaseResult} for the format), so a phase that fails leaves the others' figures.
 *
 * <p>Arguments: {@code setup=NAME workDir=PATH result=PATH phases=A,B,...} and {@link CompareSettings#toArgs()}.
 */
public final class CompareChild {
    static final long SAMPLE_MILLIS = 250;
    static final long CHECKPOINT_POLL_MILLIS = 5;
    static final int VALUE_POOL = 4096; // a power of two
    static final long SEED = 42;
    /** Puts per call when a gets phase preloads its keys. */
    static final int PRELOAD_BATCH = 100;
    /** The compiler's share of a warm-up round under which the JIT counts as settled. */
    static final int SETTLED_JIT_PERCENT = 5;
    /** The most warm-up rounds a child runs. */
    static final int WARMUP_ROUNDS = 4;

    /**
     * Whether a warm-up round of {@code elapsedNanos} in which the JIT compiler worked {@code jitMillis} leaves it
     * settled: at most {@value #SETTLED_JIT_PERCENT}% of the round, or a JVM that does not time its compiler (-1).
     */
    static boolean jitSettled(long jitMillis, long elapsedNanos) {
        return jitMillis < 0 || jitMillis * 1_000_000L * 100 <= SETTLED_JIT_PERCENT * elapsedNanos;
    }

    private CompareChild() {
    }

    public static void main(String[] args) throws IOException {
        Map<String, String> a = new LinkedHashMap<>();
        for (String s : args) {
            int eq = s.indexOf('=');
            if (eq > 0) a.put(s.substring(0, eq), s.substring(eq + 1));
        }
        CompareSetup setup = CompareSetup.valueOf(a.get("setup"));
        Path work = Path.of(a.get("workDir"));
        Path result = Path.of(a.get("result"));
        List<ComparePhase> phases = new ArrayList<>();
        for (String p : a.get("phases").split(",")) phases.add(ComparePhase.valueOf(p));
        CompareSettings s = CompareSettings.fromArgs(List.of(args));
        Files.deleteIfExists(result);
        byte[][] pool = Values.textPool(VALUE_POOL, CompareSettings.MIN_VALUE_BYTES, CompareSettings.MAX_VALUE_BYTES, SEED);
        int code = 0;
        try {
            if (s.warmupSeconds() > 0) append(result, "D " + warmUp(setup, s, phases, work.resolve("warmup"), pool).replace('\n', ' '));
        } catch (Throwable t) {
            append(result, "E WARMUP " + oneLine(t));
            code = 1;
        }
        for (ComparePhase p : phases) {
            try {
                PhaseResult r = runPhase(setup, s, p, work.resolve(p.name().toLowerCase(java.util.Locale.ROOT)), s.seconds(), pool);
                if (s.warmupSeconds() <= 0 && p == phases.get(0)) append(result, "D " + r.description().replace('\n', ' '));
                append(result, r.serialize());
            } catch (Throwable t) {
                t.printStackTrace();
                append(result, "E " + p.name() + " " + oneLine(t));
                code = 1;
            }
        }
        System.out.flush();
        // Ignite leaves non-daemon threads behind a stopped node: leave explicitly
        System.exit(code);
    }

    private static String oneLine(Throwable t) {
        StringWriter w = new StringWriter();
        Throwable c = t;
        while (c.getCause() != null && c.getCause() != c) c = c.getCause();
        w.append(t.toString());
        if (c != t) w.append(" (cause: ").append(c.toString()).append(')');
        return w.toString().replace('\n', ' ').replace('\r', ' ');
    }

    private static void append(Path file, String text) throws IOException {
        Files.writeString(file, text.endsWith("\n") ? text : text + "\n", StandardCharsets.UTF_8, StandardOpenOption.CREATE, StandardOpenOption.APPEND);
    }

    static PeerTarget open(CompareSetup setup, CompareSettings s, Path dir, boolean ownPartitions) {
        return switch (setup.kind) {
            case VARVE -> new VarveTarget(setup, s, dir, ownPartitions);
            case IGNITE -> new IgniteTarget(setup, s, dir);
            case H2 -> new H2Target(s, dir);
            case ROCKSDB -> new RocksDbTarget(s, dir);
        };
    }

    /** Sums the checkpoints a target completes while the phase runs, polled every few milliseconds. */
    private static final class CheckpointPoller extends Thread {
        private final PeerTarget target;
        private volatile boolean running = true;
        private long lastKey;
        long checkpoints, missed, pages, recoveryBytes, recoveryNanos, pageWriteNanos, fsyncNanos, lockNanos, totalNanos;
        boolean any;

        CheckpointPoller(PeerTarget target) {
            super("checkpoint-poller");
            setDaemon(true);
            this.target = target;
            PeerTarget.Checkpoint c = target.lastCheckpoint();
            lastKey = c == null ? 0 : c.key();
        }

        @Override
        public void run() {
            while (running) {
                poll();
                LockSupport.parkNanos(CHECKPOINT_POLL_MILLIS * 1_000_000L);
            }
        }

        synchronized void poll() {
            PeerTarget.Checkpoint c = target.lastCheckpoint();
            if (c == null || c.key() == lastKey) return;
            if (target instanceof VarveTarget && c.key() > lastKey + 1) missed += c.key() - lastKey - 1; // ids are consecutive
            lastKey = c.key();
            any = true;
            checkpoints++;
            pages += Math.max(0, c.pages());
            recoveryBytes += Math.max(0, c.recoveryDataBytes());
            recoveryNanos += Math.max(0, c.recoveryDataNanos());
            pageWriteNanos += Math.max(0, c.pageWriteNanos());
            fsyncNanos += Math.max(0, c.fsyncNanos());
            lockNanos += Math.max(0, c.lockHoldNanos());
            totalNanos += Math.max(0, c.totalNanos());
        }

        void finish() throws InterruptedException {
            running = false;
            join();
            poll();
        }
    }

    /**
     * A get of preloaded {@code id}, checked against the value put (rebuilt in {@code expected}, a
     * {@value ComparePhase#GET_VALUE_BYTES}-byte scratch array): a system that answers with anything else fails the phase.
     */
    static void get(PeerTarget target, long id, byte[] expected) {
        byte[] v = target.get(id);
        Values.fill(expected, id);
        if (v == null || !Arrays.equals(v, expected))
            throw new IllegalStateException("get of preloaded id " + id + " returned " + (v == null ? "nothing" : v.length + " bytes of another value"));
    }

    /**
     * The unreported warm-up: every write phase to be measured (full-speed puts when there is none), for the settings'
     * warm-up each, on fresh stores, in rounds until the JIT compiler worked at most {@value #SETTLED_JIT_PERCENT}% of
     * a round — each phase's own paths (a second writer, a caller-placed table, batches, a fixed rate) compile here,
     * not in its measured interval — or {@value #WARMUP_ROUNDS} rounds. A JVM that does not time its compiler gets one.
     * Returns the store's description.
     */
    static String warmUp(CompareSetup setup, CompareSettings s, List<ComparePhase> phases, Path dir, byte[][] pool) throws Exception {
        List<ComparePhase> writes = phases.stream().filter(p -> !p.reads()).distinct().toList();
        if (writes.isEmpty()) writes = List.of(ComparePhase.FULL_SPEED);
        String description = null;
        for (int round = 0; round < WARMUP_ROUNDS; round++) {
            long t0 = System.nanoTime();
            CpuTimes c0 = CpuTimes.now();
            for (ComparePhase p : writes) {
                PhaseResult r = runPhase(setup, s, p, dir, s.warmupSeconds(), pool);
                if (description == null) description = r.description();
            }
            long jit = CpuTimes.now().since(c0).compileMillis();
            if (jitSettled(jit, System.nanoTime() - t0)) break;
        }
        return description;
    }

    private static boolean anyAlive(Thread[] threads) {
        for (Thread t : threads) if (t.isAlive()) return true;
        return false;
    }

    /**
     * Before a gets phase: puts every id of {@code [0, keys)} in id order, lets the store settle, then gets every id once
     * (untimed) so the JIT and the caches start warm for every system alike.
     */
    static void preload(PeerTarget target, long keys) {
        long[] ids = new long[PRELOAD_BATCH];
        byte[][] values = new byte[PRELOAD_BATCH][];
        for (long first = 0; first < keys; first += PRELOAD_BATCH) {
            int n = (int) Math.min(PRELOAD_BATCH, keys - first);
            for (int i = 0; i < n; i++) {
                ids[i] = first + i;
                values[i] = Values.of(first + i, ComparePhase.GET_VALUE_BYTES);
            }
            target.putBatch(ids, values, n);
        }
        target.settle();
        byte[] expected = new byte[ComparePhase.GET_VALUE_BYTES];
        for (long id = 0; id < keys; id++) get(target, id, expected);
    }

    static PhaseResult runPhase(CompareSetup setup, CompareSettings s, ComparePhase phase, Path dir, int seconds, byte[][] pool)
            throws Exception {
        WalSyncMode sync = s.sync(); // the run's: a phase with its own durability is still reported under the run's mode
        StoreDirs.wipe(dir);
        Files.delete(dir.resolve(StoreDirs.MARKER)); // the systems want their directory to themselves
        s = s.withThreads(phase.writers(s.threads()));
        if (phase.sync != null) s = s.withSync(phase.sync);
        long t0 = System.nanoTime();
        PeerTarget target = open(setup, s, dir, phase.ownPartitions);
        long openNanos = System.nanoTime() - t0;
        String description;
        List<long[]> series = new ArrayList<>();
        Map<String, Long> v = new LinkedHashMap<>();
        try { // a failed preload closes the store too: else it keeps its threads and memory (Ignite: its node's name) for the next phase
            description = target.describe();
            if (phase.reads()) preload(target, s.keys());
            // A full collection before the interval, as JMH's -gc option runs between iterations: the child JVM is
            // seconds old, so everything it holds (its classes' strings, the store just opened) is still young, and a
            // young collection in the interval would copy all of it — 13 MB and 15-50 ms on a 2-vCPU VM whose memory the
            // host backs at first touch — where a long-running application's would copy what the last moments
            // allocated. It also frees the direct memory of the stores closed before, which would otherwise make the
            // next open wait for a collection of its own.
            System.gc();
            int n = s.threads();
            AtomicLongArray ops = new AtomicLongArray(n * CompareWriter.PAD);
            PeerTarget.Gauges g0 = target.gauges();
            CheckpointPoller poller = new CheckpointPoller(target);
            poller.start();
            long start = System.nanoTime() + 20_000_000L;
            long end = start + seconds * 1_000_000_000L;
            CompareWriter[] writers = new CompareWriter[n];
            for (int i = 0; i < n; i++) (writers[i] = new CompareWriter(target, phase, s, pool, i, ops, start, end)).start();
            CpuTimes cpu0 = CpuTimes.now(); // before the writers start: a sampler woken late would miss their first puts
            // the sampler: this thread
            LockSupport.parkNanos(Math.max(0, start - System.nanoTime()));
            long nextSample = start;
            while (true) {
                long now = System.nanoTime();
                long total = 0;
                for (int i = 0; i < n; i++) total += ops.get(i * CompareWriter.PAD);
                PeerTarget.Gauges g = target.gauges();
                series.add(new long[] {(now - start) / 1_000_000L, total, g.bufferPages(), g.dirtyPages()});
                if (!anyAlive(writers) || now >= end) break;
                nextSample = Math.min(nextSample + SAMPLE_MILLIS * 1_000_000L, end);
                LockSupport.parkNanos(Math.max(0, nextSample - System.nanoTime()));
            }
            for (CompareWriter w : writers) w.join();
            long elapsed = System.nanoTime() - start;
            CpuTimes cpu = CpuTimes.now().since(cpu0);
            for (CompareWriter w : writers) if (w.failure != null) throw new IllegalStateException("writer " + w.getName() + " failed", w.failure);
            poller.finish();
            PeerTarget.Gauges g1 = target.gauges();
            Histogram h = new Histogram(3);
            long opsTotal = 0;
            long valueBytes = 0;
            long writerCpu = 0;
            for (int i = 0; i < n; i++) {
                h.add(writers[i].latency);
                opsTotal += ops.get(i * CompareWriter.PAD);
                valueBytes += writers[i].valueBytes;
                writerCpu = writerCpu < 0 || writers[i].cpuNanos < 0 ? -1 : writerCpu + writers[i].cpuNanos;
            }
            v.put("ops", opsTotal);
            v.put("calls", h.getTotalCount());
            v.put("nanos", elapsed);
            v.put("valueBytes", valueBytes);
            v.put("p50", h.getValueAtPercentile(50));
            v.put("p99", h.getValueAtPercentile(99));
            v.put("p999", h.getValueAtPercentile(99.9));
            v.put("max", h.getMaxValue());
            if (cpu.processNanos() >= 0) v.put("cpuNanos", cpu.processNanos());
            if (cpu.processNanos() >= 0 && writerCpu >= 0) v.put("writerCpuNanos", writerCpu);
            if (cpu.compileMillis() >= 0) v.put("jitMillis", cpu.compileMillis());
            if (g0.walBytes() >= 0 && g1.walBytes() >= 0) v.put("walBytes", g1.walBytes() - g0.walBytes());
            if (g0.throttledNanos() >= 0 && g1.throttledNanos() >= 0) v.put("throttledNanos", g1.throttledNanos() - g0.throttledNanos());
            // only systems with checkpoints get checkpoint figures (0 when none completed); H2 and RocksDB have none, and a
            // 0 would read as "writes no pages" in the table
            if (poller.any || setup.kind == CompareSetup.Kind.VARVE || setup.kind == CompareSetup.Kind.IGNITE) {
                v.put("checkpoints", poller.checkpoints);
                v.put("missed", poller.missed);
                v.put("cpPages", poller.pages);
                v.put("rfBytes", poller.recoveryBytes);
                v.put("rfNanos", poller.recoveryNanos);
                v.put("pageWriteNanos", poller.pageWriteNanos);
                v.put("fsyncNanos", poller.fsyncNanos);
                v.put("lockNanos", poller.lockNanos);
                v.put("cpTotalNanos", poller.totalNanos);
            }
            v.put("storeBytes", target.storeBytes(dir));
            v.put("openMillis", openNanos / 1_000_000L);
        } finally {
            target.close();
        }
        StoreDirs.delete(dir);
        return new PhaseResult(setup, phase, sync, v, series, description, null);
    }
}
