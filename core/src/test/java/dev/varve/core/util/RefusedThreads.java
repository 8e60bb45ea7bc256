package dev.varve.core.util;

import java.util.concurrent.ThreadFactory;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Threads the OS refuses to start, as it does once a process (or its container) has reached its limit on threads:
 * the JVM then throws {@code OutOfMemoryError: unable to create native thread} from {@link Thread#start}. Tests run as
 * root, whom {@code ulimit -u} does not limit, so the refusal is given by the factory a component makes its threads with.
 */
public final class RefusedThreads {
    private RefusedThreads() {
    }

    /** A factory whose every thread is refused. */
    public static ThreadFactory all() {
        return after(0);
    }

    /** A factory whose first {@code allowed} threads start, and every later one is refused. */
    public static ThreadFactory after(int allowed) {
        AtomicInteger made = new AtomicInteger();
        return r -> made.incrementAndGet() <= allowed ? new Thread(r) : new Thread(r) {
            @Override
            public synchronized void start() {
                throw new OutOfMemoryError("unable to create native thread: possibly out of memory or process/resource limits reached");
            }
        };
    }
}
