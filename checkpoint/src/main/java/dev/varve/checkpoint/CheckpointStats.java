package dev.varve.checkpoint;

import java.util.concurrent.TimeUnit;

/**
 * The figures of one checkpoint, in the shape of the IEP-113 breakdown.
 *
 * @param id                   checkpoint id
 * @param reason               what triggered it (timer, dirty pages, wal volume, memory pressure, explicit, shutdown,
 *                             recovery)
 * @param pages                pages written
 * @param recoveryData         "recovery files", "physical wal" or "none"
 * @param recoveryDataBytes    bytes of recovery files written
 * @param recoveryDataNanos    time writing and fsyncing recovery files
 * @param pageWriteNanos       time writing pages to the page files
 * @param fsyncNanos           time fsyncing page files
 * @param lockHoldNanos        time from asking for the checkpoint write lock to releasing it: the wait for the writes in
 *                             flight, then the hold; writes that start meanwhile wait all of it
 * @param totalNanos           wall time of the whole checkpoint
 * @param copyOnWritePages     pages writers copied into the checkpoint buffer during it
 * @param throttledNanos       time writers were throttled during it
 * @param walBytes             WAL bytes written since the previous checkpoint's mark
 */
public record CheckpointStats(long id, String reason, int pages, String recoveryData, long recoveryDataBytes, long recoveryDataNanos,
                             long pageWriteNanos, long fsyncNanos, long lockHoldNanos, long totalNanos, long copyOnWritePages,
                             long throttledNanos, long walBytes) {
    /** Before the first checkpoint. */
    public static final CheckpointStats NONE = new CheckpointStats(0, "none", 0, "none", 0, 0, 0, 0, 0, 0, 0, 0, 0);

    @Override
    public String toString() {
        return String.format("checkpoint %d (%s): %d pages, recovery data %s %d bytes in %d ms, page writes %d ms, fsync %d ms, "
                        + "lock held %d us, total %d ms, copy-on-write %d pages, throttled %d ms, wal %d bytes",
                id, reason, pages, recoveryData, recoveryDataBytes, ms(recoveryDataNanos), ms(pageWriteNanos), ms(fsyncNanos),
                TimeUnit.NANOSECONDS.toMicros(lockHoldNanos), ms(totalNanos), copyOnWritePages, ms(throttledNanos), walBytes);
    }

    private static long ms(long nanos) {
        return TimeUnit.NANOSECONDS.toMillis(nanos);
    }
}
