package dev.varve.infinispan;

import java.util.concurrent.TimeUnit;

/**
 * When a failed store may be reopened again. Infinispan asks a store whether it is available every availability
 * interval (a second by default), and {@link VarveStore} reopens a failed store when asked; on a disk still full or
 * still failing, each reopen runs a recovery and fails again. So the first reopen runs at once, and the wait before
 * each next one doubles, from a second up to a minute; a reopened store that stays sound for a minute starts the
 * waits over. Times are the caller's nanosecond clock.
 */
final class ReopenBackoff {
    static final long FIRST_WAIT_NANOS = TimeUnit.SECONDS.toNanos(1);
    static final long LONGEST_WAIT_NANOS = TimeUnit.MINUTES.toNanos(1);

    private boolean attempted;
    private long lastAttempt;
    private long wait;

    /** Whether a reopen may run at {@code now}. */
    boolean due(long now) {
        return !attempted || now - lastAttempt >= wait;
    }

    /** A reopen runs at {@code now}; returns how long the next one must wait after it, nanoseconds. */
    long attempted(long now) {
        wait = attempted ? Math.min(2 * wait, LONGEST_WAIT_NANOS) : FIRST_WAIT_NANOS;
        attempted = true;
        lastAttempt = now;
        return wait;
    }

    /** The store was found sound at {@code now}: a minute after the last reopen, the waits start over. */
    void sound(long now) {
        if (attempted && now - lastAttempt >= LONGEST_WAIT_NANOS) attempted = false;
    }
}
