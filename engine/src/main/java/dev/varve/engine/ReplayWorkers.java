package dev.varve.engine;

import dev.varve.core.util.StoreThreads;

import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.IntConsumer;

/**
 * Logical replay by partition: the recovering thread reads the WAL and hands each operation to the
 * worker that owns its partition, so partitions are rebuilt in parallel while each one still sees its operations in
 * WAL order — which is all I6 asks (the same page images, partition by partition: a partition's pages, its page
 * allocation and its free list belong to it alone). Whatever orders partitions against each other — a snapshot's
 * declaration (I9), a partition destroyed, a table created, a checkpoint — first {@link #drain drains} the workers.
 *
 * <p>Operations travel in chunks, so a worker's queue costs one hand-over per {@value #CHUNK} operations; a full
 * queue makes the reader wait, so a slow worker never lets operations pile up on the heap. The reader copies each
 * operation's bytes from the WAL into its chunk in one copy and allocates nothing per operation; the worker makes the
 * key and value arrays the tree takes, and hands the chunk back for reuse. The reader is the one thread of replay, and
 * an array per key and value on it (with the fresh heap they fill) was what bounded replay: the workers waited for it.
 *
 * <p>Each record comes with the head-room recovery reserved for it, which goes back to the page memory once the
 * record is applied: a record of one operation with its chunk, one of several once the last of its operations is
 * applied, whichever worker that is. Recovery waits for that ({@link #awaitApplied}) when the region is short, where
 * it drained every worker before — some 8,700 times in the replay of a 1.7 GB WAL, each time leaving the workers
 * without work until the reader had filled their queues again.
 */
final class ReplayWorkers implements AutoCloseable {
    static final int CHUNK = 256;
    private static final int QUEUED_CHUNKS = 8;

    /** Makes the workers' threads: {@code Thread::new}, or in tests one the OS refuses to start. */
    static volatile ThreadFactory threads = Thread::new;

    private final Worker[] workers;
    /** What the workers' counts of chunks applied are guarded by, and what they notify. */
    private final Object progress = new Object();
    /** The head-room of the record being submitted: pages, and the operations it has left to submit. */
    private int recordPages;
    private int recordOperations;
    private SharedRelease recordRelease;

    /**
     * Starts {@code count} worker threads (at least 2: with one, the reader applies operations itself), which return
     * each record's head-room through {@code release} once it is applied.
     */
    ReplayWorkers(int count, IntConsumer release) {
        if (count < 2) throw new IllegalArgumentException("replay workers: " + count + " (at least 2)");
        workers = new Worker[count];
        for (int i = 0; i < count; i++) {
            try {
                workers[i] = new Worker("varve-replay-" + i + StoreThreads.suffix(), release, progress);
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

    /**
     * Starts a record of {@code operations} operations (at least 1), for which recovery reserved {@code pages} of
     * head-room; its operations follow through {@link #submit}.
     */
    void beginRecord(int pages, int operations) {
        recordPages = pages;
        recordOperations = operations;
        recordRelease = operations > 1 ? new SharedRelease(pages, operations) : null;
    }

    /**
     * Queues one operation of the record begun for the worker of {@code h}'s partition: the key is {@code keyLength}
     * bytes of {@code b} from index {@code keyOffset}, the value {@code valueLength} bytes from {@code valueOffset} (-1
     * for a remove). Copies them; rethrows a worker's failure.
     */
    void submit(PartitionHandle h, ByteBuffer b, int keyOffset, int keyLength, int valueOffset, int valueLength) {
        if (recordOperations-- <= 0) throw new IllegalStateException("more operations submitted than the record begun holds");
        int mixed = h.fileId * 0x9E3779B9;
        Worker w = workers[Math.floorMod(mixed ^ (mixed >>> 16), workers.length)];
        w.add(h, b, keyOffset, keyLength, valueOffset, valueLength, recordRelease == null ? recordPages : 0, recordRelease);
    }

    /**
     * Hands over the chunks being filled, so that no worker waits while the reader does, then waits until one more
     * chunk is applied, its records' head-room returned. False at once when every operation submitted is applied.
     */
    boolean awaitApplied() {
        for (Worker w : workers) w.rethrow();
        for (Worker w : workers) w.flush();
        synchronized (progress) {
            long before = applied();
            if (before == submitted()) return false;
            while (applied() == before) awaitProgress(progress);
        }
        return true;
    }

    /** Waits for a worker's notification on {@code progress}, whose monitor the caller holds. */
    private static void awaitProgress(Object progress) {
        try {
            progress.wait();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while waiting for the replay workers", e);
        }
    }

    /** Chunks applied by all the workers; the caller holds {@code progress}. */
    private long applied() {
        long n = 0;
        for (Worker w : workers) n += w.done;
        return n;
    }

    /** Chunks handed over to all the workers; the reader's. */
    private long submitted() {
        long n = 0;
        for (Worker w : workers) n += w.submitted;
        return n;
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

    /** The head-room of a record of several operations, which may be applied by different workers: the last returns it. */
    private static final class SharedRelease {
        final int pages;
        final AtomicInteger unapplied;

        SharedRelease(int pages, int operations) {
            this.pages = pages;
            this.unapplied = new AtomicInteger(operations);
        }

        /** Pages to return now that one more operation of the record is applied: all of them after the last, else 0. */
        int applied() {
            return unapplied.decrementAndGet() == 0 ? pages : 0;
        }
    }

    /** Operations of one partition set, applied in queue order by one thread. */
    private static final class Worker implements Runnable {
        private static final Chunk STOP = new Chunk();
        private final IntConsumer release;
        private final Object progress;
        private final BlockingQueue<Chunk> queue = new ArrayBlockingQueue<>(QUEUED_CHUNKS);
        /** Chunks applied, for the reader to fill again: the queued ones, the one applied and the one filled are all there are. */
        private final BlockingQueue<Chunk> reusable = new ArrayBlockingQueue<>(QUEUED_CHUNKS + 2);
        private final Thread thread;
        private Chunk filling = new Chunk();
        private long submitted; // chunks handed over; the reader's alone
        private long done; // chunks applied or skipped after a failure; guarded by progress
        private volatile Throwable failure;

        Worker(String name, IntConsumer release, Object progress) {
            this.release = release;
            this.progress = progress;
            thread = threads.newThread(this);
            thread.setName(name);
            thread.setDaemon(true);
            thread.start();
        }

        void add(PartitionHandle h, ByteBuffer b, int keyOffset, int keyLength, int valueOffset, int valueLength, int pages, SharedRelease shared) {
            if (!filling.fits(keyLength + Math.max(0, valueLength))) flush();
            filling.add(h, b, keyOffset, keyLength, valueOffset, valueLength, pages, shared);
            if (filling.count == CHUNK) flush();
            if (failure != null) rethrow();
        }

        void flush() {
            if (filling.count == 0) return;
            put(filling);
            submitted++;
            Chunk reused = reusable.poll();
            filling = reused != null ? reused : new Chunk();
        }

        private void put(Chunk c) {
            try {
                queue.put(c);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted while handing operations to a replay worker", e);
            }
        }

        void awaitDone() {
            synchronized (progress) {
                while (done < submitted) awaitProgress(progress);
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
                    int pages = c.pagesApplied(); // returned before the chunk counts as done: awaitApplied's caller reserves them again
                    if (pages > 0) release.accept(pages);
                    c.clear();
                    reusable.offer(c);
                    synchronized (progress) {
                        done++;
                        progress.notifyAll();
                    }
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /**
     * Up to {@value #CHUNK} operations, in WAL order, their bytes in one array: each key, its value right after it.
     * The array holds {@value #KEPT_BYTES} bytes, or one larger operation (which the chunk drops once applied).
     */
    private static final class Chunk {
        static final int KEPT_BYTES = 256 << 10;
        final PartitionHandle[] handles = new PartitionHandle[CHUNK];
        final int[] offsets = new int[CHUNK];
        final int[] keyLengths = new int[CHUNK];
        final int[] valueLengths = new int[CHUNK]; // -1: a remove
        /** The head-room of the records of several operations that the operations belong to, null for the others. */
        final SharedRelease[] shared = new SharedRelease[CHUNK];
        byte[] bytes = new byte[KEPT_BYTES];
        int used;
        int count;
        /** The head-room of the records of one operation in the chunk. */
        int pages;

        /** Whether an operation of {@code opBytes} more bytes goes in; an empty chunk takes any (it grows). */
        boolean fits(int opBytes) {
            return count == 0 || opBytes <= bytes.length - used;
        }

        void add(PartitionHandle h, ByteBuffer b, int keyOffset, int keyLength, int valueOffset, int valueLength, int pages, SharedRelease shared) {
            int opBytes = keyLength + Math.max(0, valueLength);
            if (opBytes > bytes.length - used) bytes = Arrays.copyOf(bytes, used + opBytes);
            b.get(keyOffset, bytes, used, keyLength);
            if (valueLength > 0) b.get(valueOffset, bytes, used + keyLength, valueLength);
            handles[count] = h;
            offsets[count] = used;
            keyLengths[count] = keyLength;
            valueLengths[count] = valueLength;
            this.shared[count] = shared;
            this.pages += pages;
            used += opBytes;
            count++;
        }

        void apply() {
            for (int i = 0; i < count; i++) {
                int keyEnd = offsets[i] + keyLengths[i];
                byte[] key = Arrays.copyOfRange(bytes, offsets[i], keyEnd);
                byte[] value = valueLengths[i] < 0 ? null : Arrays.copyOfRange(bytes, keyEnd, keyEnd + valueLengths[i]);
                Engine.applyOp(handles[i], key, value);
            }
        }

        /** The head-room the chunk's operations, all applied, give back (a shared record's once its last one is). */
        int pagesApplied() {
            int n = pages;
            for (int i = 0; i < count; i++) if (shared[i] != null) n += shared[i].applied();
            return n;
        }

        /** Empties the chunk for the reader to fill again. */
        void clear() {
            Arrays.fill(handles, 0, count, null);
            Arrays.fill(shared, 0, count, null);
            pages = 0;
            if (bytes.length > KEPT_BYTES) bytes = new byte[KEPT_BYTES];
            used = 0;
            count = 0;
        }
    }
}
