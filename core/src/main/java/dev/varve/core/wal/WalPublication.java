package dev.varve.core.wal;

import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;

/**
 * The WAL's published position, and the order appends publish in: writers reserve their records under the append
 * lock, copy them concurrently, and each publishes (moves the position past its record) only once every record
 * reserved before it is published, so every record below the position is complete.
 *
 * <p>A writer waiting for its turn spins, then yields, then parks; the publish it waits for wakes it. Parking on a
 * timer alone, as before, made a convoy: with more writers than cores, a parked writer slept past its turn and held
 * every writer behind it until its timer fired, so each record in line cost a timer period (8 FSYNC writers in
 * WAL_PHYSICAL mode, two records a put, made 600 puts/s where recovery files made 30,000).
 */
final class WalPublication {
    /** Spins before a writer yields its core to the writer it waits for. */
    private static final int SPINS = 128;
    /** Yields before it parks: a writer descheduled between its reservation and its publish holds everyone after it. */
    private static final int YIELDS = 16;
    /** A parked writer looks again this often even if not woken: to see a failure of the WAL. */
    static final long PARK_NANOS = 1_000_000;

    private final long parkNanos;
    /** Next LSN: every record below it is complete. */
    private volatile long position;
    /** Writers parked until the position reaches their record's LSN. */
    private final ConcurrentLinkedQueue<Waiter> parked = new ConcurrentLinkedQueue<>();

    private record Waiter(Thread thread, long lsn) {
    }

    /** Starts at {@code position}; a parked writer looks again every {@code parkNanos} ({@link #PARK_NANOS}). */
    WalPublication(long position, long parkNanos) {
        this.position = position;
        this.parkNanos = parkNanos;
    }

    long position() {
        return position;
    }

    /**
     * Moves the position to {@code lsn} — the end of the record just published, or the first LSN of a new segment —
     * and wakes the writer parked for it. The position is set before the parked writers are looked at, and a writer
     * is queued before it looks at the position, so one of the two always sees the other.
     */
    void advance(long lsn) {
        position = lsn;
        if (parked.isEmpty()) return;
        for (Waiter w : parked) if (w.lsn == lsn) LockSupport.unpark(w.thread);
    }

    /**
     * Waits until the position reaches {@code lsn}: every record reserved before it is published. False when
     * {@code failed} says the WAL failed meanwhile (a writer before this one may never publish its record).
     */
    boolean await(long lsn, BooleanSupplier failed) {
        for (int spins = 0; spins < SPINS + YIELDS; spins++) {
            if (position == lsn) return true;
            if (failed.getAsBoolean()) return false;
            if (spins < SPINS) Thread.onSpinWait();
            else Thread.yield();
        }
        Waiter me = new Waiter(Thread.currentThread(), lsn);
        parked.add(me);
        try {
            while (position != lsn) {
                if (failed.getAsBoolean()) return false;
                LockSupport.parkNanos(this, parkNanos);
            }
            return true;
        } finally {
            parked.remove(me);
        }
    }
}
