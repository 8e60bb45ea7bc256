package dev.varve.core.util;

import java.util.concurrent.TimeUnit;

/**
 * Waiting for a store's thread to end when closing, also from a caller whose interrupt is set (a store closed from a
 * cancelled task): leaving a thread running on files being closed is what close must not do, so the wait is not cut
 * short by the interrupt, which is kept for the caller. Bounded by a deadline, so a thread stuck on a failing disk
 * cannot hang close.
 */
public final class ThreadEnd {
    private ThreadEnd() {
    }

    /**
     * Waits until {@code thread} has ended or {@code deadline} ({@link System#nanoTime}) has passed.
     *
     * @return true when it ended
     */
    public static boolean await(Thread thread, long deadline) {
        boolean interrupted = false;
        try {
            while (thread.isAlive()) {
                long left = deadline - System.nanoTime();
                if (left <= 0) return false;
                try {
                    thread.join(Math.max(1, TimeUnit.NANOSECONDS.toMillis(left)));
                } catch (InterruptedException e) {
                    interrupted = true;
                }
            }
            return true;
        } finally {
            if (interrupted) Thread.currentThread().interrupt();
        }
    }
}
