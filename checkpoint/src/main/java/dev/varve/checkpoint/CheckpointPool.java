package dev.varve.checkpoint;

import dev.varve.core.io.StorageException;
import dev.varve.core.util.StoreThreads;
import dev.varve.core.util.ThreadEnd;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.FutureTask;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The {@code checkpointThreads} threads a checkpoint spreads its recovery-file and page writes over. It is not an
 * agent: it has no duty cycle, only fork-join work handed to it by the checkpoint that runs. When the store's agents
 * are stepped by hand ({@link dev.varve.core.agent.Agents#invoked}) it has no threads, and every slice runs in turn
 * on the thread that runs the checkpoint, so a test that steps the checkpointer sees the same order every time.
 */
final class CheckpointPool implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(CheckpointPool.class);
    /** Work on one slice. */
    interface SliceTask<T> {
        void run(int index, T slice) throws Exception;
    }

    /** How long close waits for a thread still in a call (a write stuck on a failing disk) before it leaves it. */
    private static final long TERMINATION_WAIT_SECONDS = 30;

    /** Null when slices run on the calling thread. */
    private final ExecutorService executor;
    private final int threads;
    /** Every thread the pool made: close joins them. */
    private final List<Thread> made = new CopyOnWriteArrayList<>();

    /** A pool of {@code threads} threads, or none when not {@code parallel}. */
    CheckpointPool(int threads, boolean parallel) {
        this(threads, parallel, Thread::new);
    }

    /** As above, its threads made by {@code factory}: the test seam for threads the OS refuses to start. */
    CheckpointPool(int threads, boolean parallel, ThreadFactory factory) {
        this.threads = threads;
        if (!parallel) {
            this.executor = null;
            return;
        }
        AtomicInteger n = new AtomicInteger();
        String store = StoreThreads.suffix(); // pool threads start later, on other threads
        this.executor = Executors.newFixedThreadPool(threads, r -> {
            Thread t = factory.newThread(r);
            t.setName("varve-checkpoint-" + n.incrementAndGet() + store);
            t.setDaemon(true);
            made.add(t);
            return t;
        });
    }

    int threads() {
        return threads;
    }

    /** Cuts a sorted list into at most {@code n} contiguous slices (at least one, possibly empty). */
    static <T> List<List<T>> slices(List<T> items, int n) {
        int k = Math.max(1, Math.min(n, items.size()));
        List<List<T>> out = new ArrayList<>(k);
        for (int i = 0; i < k; i++) out.add(items.subList(items.size() * i / k, items.size() * (i + 1) / k));
        return out;
    }

    /** Runs {@code task} on every slice in parallel and waits; the first failure is rethrown. */
    <T> void forEachIndexed(List<T> slices, SliceTask<T> task) {
        if (executor == null) {
            runInline(slices, task);
            return;
        }
        List<Future<?>> futures = new ArrayList<>(slices.size());
        for (int i = 0; i < slices.size(); i++) {
            int index = i;
            T slice = slices.get(i);
            Callable<Void> work = () -> {
                task.run(index, slice);
                return null;
            };
            try {
                futures.add(executor.submit(work));
            } catch (OutOfMemoryError e) {
                // the pool starts its threads as work comes, and the OS refused one (unable to create native thread):
                // a failed checkpoint would stop the store's writes until it is reopened, so the slice runs here instead
                LOG.warn("cannot start a checkpoint thread ({}); writing its share on the checkpointer's thread", e.toString());
                FutureTask<Void> inline = new FutureTask<>(work);
                inline.run();
                futures.add(inline);
            }
        }
        RuntimeException first = null;
        // a checkpoint is not given up half-way because its caller was interrupted (a close() from a cancelled task):
        // that failed it, and with it every later write of the store; wait on, and keep the interrupt for the caller
        boolean interrupted = false;
        try {
            for (Future<?> f : futures) {
                while (true) {
                    try {
                        f.get();
                    } catch (ExecutionException e) {
                        Throwable c = e.getCause();
                        if (first == null) first = c instanceof RuntimeException r ? r : new StorageException("checkpoint task failed: " + c, null, c);
                        if (c instanceof Error err) throw err;
                    } catch (InterruptedException e) {
                        interrupted = true;
                        continue;
                    }
                    break;
                }
            }
        } finally {
            if (interrupted) Thread.currentThread().interrupt();
        }
        if (first != null) throw first;
    }

    /** Runs every slice in turn on this thread; the first failure stops the rest and is rethrown. */
    private static <T> void runInline(List<T> slices, SliceTask<T> task) {
        for (int i = 0; i < slices.size(); i++) {
            try {
                task.run(i, slices.get(i));
            } catch (RuntimeException | Error e) {
                throw e;
            } catch (Exception e) {
                throw new StorageException("checkpoint task failed: " + e, null, e);
            }
        }
    }

    /** Runs {@code action} for every item, spread over the threads. */
    <T> void forEach(List<T> items, Consumer<T> action) {
        forEachIndexed(slices(items, threads), (i, slice) -> slice.forEach(action));
    }

    @Override
    public void close() {
        if (executor == null) return;
        executor.shutdownNow();
        // close returns with the threads gone (idle ones exit at once), as a store's close promises of all its
        // threads: joined, as a terminated pool's last thread may still be on its way out
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(TERMINATION_WAIT_SECONDS);
        for (Thread t : made) if (!ThreadEnd.await(t, deadline)) return;
    }
}
