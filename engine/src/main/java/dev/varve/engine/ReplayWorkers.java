package dev.varve.engine;

import dev.varve.core.util.StoreThreads;

import java.nio.ByteBuffer;
import java.util.Arrays;
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
 * queue makes the reader wait, so a slow worker never lets operations pile up on the heap. The reader copies each
 * operation's bytes from the WAL into its chunk in one copy and allocates nothing per operation; the worker makes the
 * key and value arrays the tree takes, and hands the chunk back for reuse. The reader is the one thread of replay, and
 * an array per key and value on it (with the fresh heap they fill) was what bounded replay: the workers waited for it.
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

    /**
     * Queues one operation for the worker of {@code h}'s partition: the key is {@code keyLength} bytes of {@code b} from
     * index {@code keyOffset}, the value {@code valueLength} bytes from {@code valueOffset} (-1 for a remove). Copies
     * them; rethrows a worker's failure.
     */
    void submit(PartitionHandle h, ByteBuffer b, int keyOffset, int keyLength, int valueOffset, int valueLength) {
        int mixed = h.fileId * 0x9E3779B9;
        Worker w = workers[Math.floorMod(mixed ^ (mixed >>> 16), workers.length)];
        w.add(h, b, keyOffset, keyLength, valueOffset, valueLength);
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
        /** Chunks applied, for the reader to fill again: the queued ones, the one applied and the one filled are all there are. */
        private final BlockingQueue<Chunk> applied = new ArrayBlockingQueue<>(QUEUED_CHUNKS + 2);
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

        void add(PartitionHandle h, ByteBuffer b, int keyOffset, int keyLength, int valueOffset, int valueLength) {
            if (!filling.fits(keyLength + Math.max(0, valueLength))) flush();
            filling.add(h, b, keyOffset, keyLength, valueOffset, valueLength);
            if (filling.count == CHUNK) flush();
            if (failure != null) rethrow();
        }

        void flush() {
            if (filling.count == 0) return;
            put(filling);
            submitted++;
            Chunk reused = applied.poll();
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
                    c.clear();
                    applied.offer(c);
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
        byte[] bytes = new byte[KEPT_BYTES];
        int used;
        int count;

        /** Whether an operation of {@code opBytes} more bytes goes in; an empty chunk takes any (it grows). */
        boolean fits(int opBytes) {
            return count == 0 || opBytes <= bytes.length - used;
        }

        void add(PartitionHandle h, ByteBuffer b, int keyOffset, int keyLength, int valueOffset, int valueLength) {
            int opBytes = keyLength + Math.max(0, valueLength);
            if (opBytes > bytes.length - used) bytes = Arrays.copyOf(bytes, used + opBytes);
            b.get(keyOffset, bytes, used, keyLength);
            if (valueLength > 0) b.get(valueOffset, bytes, used + keyLength, valueLength);
            handles[count] = h;
            offsets[count] = used;
            keyLengths[count] = keyLength;
            valueLengths[count] = valueLength;
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

        /** Empties the chunk for the reader to fill again. */
        void clear() {
            Arrays.fill(handles, 0, count, null);
            if (bytes.length > KEPT_BYTES) bytes = new byte[KEPT_BYTES];
            used = 0;
            count = 0;
        }
    }
}
