package dev.varve.infinispan;

import dev.varve.core.io.FileIOFactory;
import org.infinispan.persistence.spi.PersistenceException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.nio.file.Path;
import java.util.function.LongSupplier;
import java.util.function.Supplier;

/**
 * A cache's Varve store across failures: opened at start, closed at stop, and — in a local cache — closed and opened
 * again once it has failed. A Varve store that failed (a full disk, an I/O error, a failed checkpoint) refuses every
 * write until it is reopened, and reopening recovers every acknowledged write from the WAL, as a restart of the node
 * would; so when Infinispan asks whether the store is available ({@link #available}), a failed one is reopened, and
 * the cache resumes by itself once the disk has room or works again. A reopen counts once the checkpoint its recovery
 * owes is written: on a disk still full the open alone succeeds (it writes next to nothing) and the store would fail
 * again at the next write. While a reopen fails the answer is false, so Infinispan refuses the cache's operations with
 * {@code StoreUnavailableException}; the reopens back off ({@link ReopenBackoff}). A reopen never creates a store
 * where the store has gone (a disk unmounted under its mount point): that would have the cache go on over an empty one.
 *
 * <p>A clustered cache's store is not reopened, and answers true while it is failed (its operations fail with the
 * store's failure) until the cache is restarted on the node: Infinispan refuses the topology updates of a node whose
 * persistence it was told is unavailable, which holds up every rebalance of the cluster, and closing the store under an
 * outbound state transfer would fail that transfer for good; nor would a reopened store hold what state transfer
 * brought while it was failed.
 */
final class ReopeningTables {
    private static final Logger LOG = LoggerFactory.getLogger(ReopeningTables.class);

    private final Path directory;
    private final FileIOFactory io;
    private final Supplier<SegmentTables> opener;
    private final boolean reopens;
    private final LongSupplier nanoClock;
    /** Guards opening, reopening and closing {@link #tables}, {@link #running} and {@link #backoff}. */
    private final Object lifecycle = new Object();
    private final ReopenBackoff backoff = new ReopenBackoff();
    private boolean running;
    /** The open store; null before start, after stop, and while a failed store waits to be reopened. */
    private volatile SegmentTables tables;
    /** Why {@link #tables} is null while running: the last reopen's failure. */
    private volatile String reopenFailure;

    /**
     * @param opener    opens the store (creating or recovering it)
     * @param reopens   whether a failed store is reopened (a local cache's)
     * @param nanoClock the time for the backoff, nanoseconds
     */
    ReopeningTables(Path directory, FileIOFactory io, Supplier<SegmentTables> opener, boolean reopens, LongSupplier nanoClock) {
        this.directory = directory;
        this.io = io;
        this.opener = opener;
        this.reopens = reopens;
        this.nanoClock = nanoClock;
    }

    /** Opens the store; throws what the open throws. */
    void start() {
        synchronized (lifecycle) {
            tables = opener.get();
            running = true;
        }
    }

    /** Closes the store; throws what its close throws (a full disk's failure), after releasing every file. */
    void stop() {
        synchronized (lifecycle) {
            running = false;
            reopenFailure = null;
            SegmentTables t = tables;
            tables = null;
            if (t != null) t.close();
        }
    }

    /** The open store, or a {@link PersistenceException} saying why there is none. */
    SegmentTables current() {
        SegmentTables t = tables;
        if (t != null) return t;
        String failure = reopenFailure;
        throw new PersistenceException("the Varve store of " + directory + (failure == null ? " is not running" : " failed and is not reopened yet: " + failure));
    }

    /** Whether the store can serve the cache; a failed store of a local cache is reopened here (see the class comment). */
    boolean available() {
        synchronized (lifecycle) {
            if (!running) return false;
            SegmentTables t = tables;
            String failure = t == null ? null : t.failure();
            if (t != null && (failure == null || !reopens)) {
                if (failure == null) backoff.sound(nanoClock.getAsLong());
                return directory.toFile().isDirectory();
            }
            long now = nanoClock.getAsLong();
            if (!backoff.due(now)) return false;
            if (t != null) {
                LOG.warn("the Varve store of {} failed ({}); reopening it, which recovers every acknowledged write", directory, failure);
                tables = null;
                reopenFailure = failure;
                closeFailed(t);
            }
            long wait = backoff.attempted(now);
            SegmentTables reopened;
            try {
                requireStoreStillThere();
                reopened = opener.get();
            } catch (RuntimeException e) {
                reopenFailure = e.toString();
                LOG.warn("cannot reopen the Varve store of {} (next try in {} s or more, when Infinispan asks again): {}", directory,
                        wait / 1_000_000_000L, e.toString());
                return false;
            }
            tables = reopened;
            try {
                reopened.checkpoint();
            } catch (RuntimeException e) { // kept: failed as the store before it, it reads and refuses writes
                LOG.warn("reopened the Varve store of {}, but it cannot write yet (next try in {} s or more, when Infinispan asks again): {}",
                        directory, wait / 1_000_000_000L, e.toString());
                return false;
            }
            reopenFailure = null;
            LOG.info("reopened the Varve store of {}: the cache resumes", directory);
            return true;
        }
    }

    /**
     * A reopen finds the store it closed, or fails: {@code Varve.open} creates a store where it finds none, so a
     * directory that no longer holds the store (a disk unmounted under its mount point, the directory moved away)
     * would get an empty one. Through the store's file-IO seam, as every other file access.
     */
    private void requireStoreStillThere() {
        if (!io.exists(directory.resolve("wal")) && !io.exists(directory.resolve("pages")))
            throw new PersistenceException("the Varve store of " + directory + " is gone (no wal or pages directory there: a disk unmounted, the "
                    + "directory moved?); it is not reopened empty: put the store back, and it is reopened at the next availability check");
    }

    /** Closes a failed store: it releases every file even when it throws its failure again (a full disk does). */
    private void closeFailed(SegmentTables t) {
        try {
            t.close();
        } catch (RuntimeException e) {
            LOG.debug("closing the failed Varve store of {}", directory, e);
        }
    }
}
