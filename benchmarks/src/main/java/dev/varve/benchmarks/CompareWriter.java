package dev.varve.benchmarks;

import org.HdrHistogram.Histogram;

import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.locks.LockSupport;

/**
 * One client thread of a {@link CompareChild} phase: its puts (or gets) from {@code start} to {@code end}, each timed,
 * and the CPU time the thread spent on them.
 */
final class CompareWriter extends Thread {
    /** Longs between two writers' counters: no false sharing. */
    static final int PAD = 16;

    private final PeerTarget target;
    private final ComparePhase phase;
    private final CompareSettings s;
    private final byte[][] pool;
    private final int index;
    private final AtomicLongArray ops;
    private final long start;
    private final long end;
    final Histogram latency = new Histogram(3);
    volatile Throwable failure;
    long valueBytes;
    /** CPU time this thread spent in the measured interval, -1 when the JVM cannot tell. */
    long cpuNanos = -1;

    /** Writer {@code index} of the phase, publishing how many puts (gets) it did at {@code ops[index * PAD]}. */
    CompareWriter(PeerTarget target, ComparePhase phase, CompareSettings s, byte[][] pool, int index, AtomicLongArray ops, long start, long end) {
        super("writer-" + index);
        this.target = target;
        this.phase = phase;
        this.s = s;
        this.pool = pool;
        this.index = index;
        this.ops = ops;
        this.start = start;
        this.end = end;
    }

    @Override
    public void run() {
        try {
            // what ran before the interval would be counted in it; a park may return early
            for (long wait; (wait = start - System.nanoTime()) > 0; ) LockSupport.parkNanos(wait);
            long cpu0 = CpuTimes.currentThread();
            loop();
            long cpu1 = CpuTimes.currentThread();
            if (cpu0 >= 0 && cpu1 >= 0) cpuNanos = cpu1 - cpu0;
        } catch (Throwable t) {
            failure = t;
        }
    }

    private void loop() {
        SplittableRandom rnd = new SplittableRandom(CompareChild.SEED * 31 + index);
        long nextUnique = (long) index << 40;
        int perCall = phase.batch ? s.batchSize() : 1;
        long[] ids = new long[perCall];
        byte[][] values = new byte[perCall][];
        byte[] expected = new byte[ComparePhase.GET_VALUE_BYTES];
        long every = phase.fixedRate ? Math.max(1, (long) (1e9 * perCall * s.threads() / s.rate())) : 0;
        long due = start + index * (every / s.threads());
        long done = 0;
        while (true) {
            long now = System.nanoTime();
            if (now >= end) break;
            long begin = now;
            if (phase.fixedRate) {
                if (due >= end) break;
                while ((now = System.nanoTime()) < due) {
                    long wait = due - now;
                    if (wait > 200_000) LockSupport.parkNanos(wait - 100_000);
                    else Thread.onSpinWait();
                }
                begin = due; // latency counts from when the write was due, not from when it could start
                due += every;
            }
            if (phase.reads()) {
                CompareChild.get(target, rnd.nextLong(s.keys()), expected);
            } else {
                for (int i = 0; i < perCall; i++) {
                    long id = phase.load == ComparePhase.Load.UNIQUE ? nextUnique++ : rnd.nextLong(s.keys());
                    ids[i] = id;
                    // a value drawn per put, not per id: an overwrite changes the value and, mostly, its length, as an
                    // application's would (a fixed value per id made every overwrite rewrite the same bytes in place)
                    values[i] = pool[rnd.nextInt(CompareChild.VALUE_POOL)];
                    valueBytes += values[i].length;
                }
                if (phase.batch) target.putBatch(ids, values, perCall);
                else target.put(index, ids[0], values[0]);
            }
            latency.recordValue(Math.max(0, System.nanoTime() - begin));
            done += phase.reads() ? 1 : perCall;
            ops.lazySet(index * PAD, done);
        }
    }
}
