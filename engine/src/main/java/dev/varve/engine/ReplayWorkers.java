package dev.varve.engine;

import dev.varve.core.util.StoreThreads;

import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ThreadFactory;

/**
 * Logical replay by partition: the recovering thread reads and decodes the WAL and hands each operation to the
 * worker that owns its partition, so partitions are rebuilt in parallel while each one still sees its operations in
 * WAL order — which is all I6 asks (the same page images, partition by partition: a partition's pages, its page
 * allocation and its free list belong to it alone). Whatever orders partitions against each other — a snapshot's
 * declaration (I9), a partition destroyed, a table created, a checkpoint — first {@link #drain drains} the workers.
 *
 * <p>Operations travel in chunks, so a worker's queue costs one hand-over per {@value #CHUNK} operations; a full
 * queue makes the reader wait, so a slow worker never lets decoded operations pile up on the heap.
 */
final class ReplayWorkers implements AutoCloseable {
    static final int CHUNK = 256;
    private static final int QUEUED_CHUNKS = 8;

    /** Makes the workers' threads: {@code Thread::new}, or in tests one the OS refuses to start. */
    static volatile ThreadFactory threads = Thread::new;

    private final Worker[] workers;

    /** Starts {@code count} worker threads (at least 2: with one, the reader applies operations itself). */
    ReplayWorkers(int count) {
        if (count < 2) throw new IllegalArgumentException("replay workers: " + count + " (at least 2)");
        workers = new Worker[count];
        for (int i = 0; i < count; i++) {
            try {
                workers[i] = new Worker("varve-replay-" + i + StoreThreads.suffix());
            } catch (OutOfMemoryError e) { // the OS refused the thread: the ones started would wait for work forever
                for (int j = 0; j < i; j++) workers[j].stop();
                throw e;
            }
        }
    }

    /** Workers for {@code configured} recovery threads on this machine: at most one per core; 0 when that leaves one. */
    static int count(int configured) {
        int n = Math.min(configured, Runtime.getRuntime().availableProcessors());
        return n < 2 ? 0 : n;
    }

    /** Queues one operation for the worker of {@code h}'s partition; rethrows a worker's failure. */
    void submit(PartitionHandle h, byte[] key, byte[] value) {
        int mixed = h.fileId * 0x9E3779B9;
        Worker w = workers[Math.floorMod(mixed ^ (mixed >>> 16), workers.length)];
        w.add(h, key, value);
    }

    /** Waits until every queued operation is applied; rethrows the first failure of a worker. */
    void drain() {
        for (Worker w : workers) w.flush();
        for (Worker w : workers) w.awaitDone();
        for (Worker w : workers) w.rethrow();
    }

    /** Stops the workers; operations still queued are dropped (call {@link #drain} first to keep them). */
    @Override
    public void close() {
        for (Worker w : workers) w.stop();
    }

    /** Operations of one partition set, applied in queue order by one thread. */
    private static final class Worker implements Runnable {
        private static final Chunk STOP = new Chunk();
        private final BlockingQueue<Chunk> queue = new ArrayBlockingQueue<>(QUEUED_CHUNKS);
        private final Thread thread;
        private Chunk filling = new Chunk();
        private long submitted; // chunks handed over; the reader's alone
        private long done; // chunks applied or skipped after a failure; guarded by this
        private volatile Throwable failure;

        Worker(String name) {
            thread = threads.newThread(this);
            thread.setName(name);
            thread.setDaemon(true);
            thread.start();
        }

        void add(PartitionHandle h, byte[] key, byte[] value) {
            filling.add(h, key, value);
            if (filling.count == CHUNK) flush();
            if (failure != null) rethrow();
        }

        void flush() {
            if (filling.count == 0) return;
            put(filling);
            submitted++;
            filling = new Chunk();
        }

        private void put(Chunk c) {
            try {
                queue.put(c);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted while handing operations to a replay worker", e);
            }
        }

        synchronized void awaitDone() {
            try {
                while (done < submitted) wait();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted while waiting for the replay workers", e);
            }
        }

        void rethrow() {
            Throwable t = failure;
            if (t instanceof RuntimeException r) throw r;
            if (t instanceof Error e) throw e;
            if (t != null) throw new IllegalStateException("a replay worker failed", t);
        }

        void stop() {
            put(STOP);
            try {
                thread.join();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }

        @Override
        public void run() {
            try {
                for (Chunk c; (c = queue.take()) != STOP; ) {
                    if (failure == null) {
                        try {
                            c.apply();
                        } catch (Throwable t) {
                            failure = t; // later chunks are skipped; the reader rethrows at its next add or drain
                        }
                    }
                    synchronized (this) {
                        done++;
                        notifyAll();
                    }
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /** Up to {@value #CHUNK} operations, in WAL order. */
    private static final class Chunk {
        final PartitionHandle[] handles = new PartitionHandle[CHUNK];
        final byte[][] keys = new byte[CHUNK][];
        final byte[][] values = new byte[CHUNK][];
        int count;

        void add(PartitionHandle h, byte[] key, byte[] value) {
            handles[count] = h;
            keys[count] = key;
            values[count] = value;
            count++;
        }

        void apply() {
            for (int i = 0; i < count; i++) Engine.applyOp(handles[i], keys[i], values[i]);
        }
    }
}
