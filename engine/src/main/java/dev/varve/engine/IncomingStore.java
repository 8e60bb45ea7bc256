package dev.varve.engine;

import dev.varve.config.ConfigLimits;
import dev.varve.core.io.FileIOFactory;
import dev.varve.core.io.StorageException;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Comparator;
import java.util.List;
import java.util.Set;
import java.util.stream.Stream;

/**
 * A store directory that a transfer (a backup, a load, a salvage) is writing. The store is built in
 * {@code TARGET/.incoming} ({@link Varve#INCOMING_DIR}), which every open and every tool refuses as an unfinished
 * transfer, and moved up into TARGET only once it is complete and closed ({@link #commit}), fsyncing the directory in
 * between: a transfer killed half-way (SIGKILL, power loss: no cleanup runs) leaves a directory that refuses to open,
 * never a partial store that passes for a whole one, and the same transfer run again over it starts afresh.
 *
 * <p>From {@link #prepare} to {@link #commit}, {@link #discard} or {@link #close} the transfer holds TARGET's store
 * lock ({@code varve.lock}, taken like an open takes it): a second transfer into the same directory, or an open of it,
 * is refused while the first runs, instead of wiping what the first is writing. The lock file is the store's own and
 * stays: the finished store is locked through it. Not thread-safe.
 */
public final class IncomingStore implements AutoCloseable {
    /**
     * What TARGET may hold beside {@code .incoming} and its lock file while a transfer is unfinished: the store's own
     * entries, which a commit cut short had moved up (its files are a store's: pages, WAL, checkpoints, archive).
     */
    private static final Set<String> STORE_ENTRIES = Set.of("pages", "wal", "checkpoints", ConfigLimits.ARCHIVE_PATH_DEFAULT_NAME);

    private final Path target;
    private final Path incoming;
    private final boolean createdTarget;
    /** Held until commit, discard or close; null after. */
    private StoreLock lock;

    private IncomingStore(Path target, boolean createdTarget, StoreLock lock) {
        this.target = target;
        this.incoming = target.resolve(Varve.INCOMING_DIR);
        this.createdTarget = createdTarget;
        this.lock = lock;
    }

    /**
     * Checks, changing nothing, that {@code target} can take a new store: it does not exist, is empty, or holds an
     * unfinished transfer (which {@link #prepare} wipes): a {@code .incoming} directory, and beside it nothing but
     * the store entries a commit cut short moved up. A directory holding anything else beside {@code .incoming} (a
     * symbolic link named so included) is not one a transfer left, and wiping it would delete what is not a store's.
     *
     * @throws IllegalArgumentException if it is a file, or a directory holding anything else (a store, say)
     */
    public static void checkTarget(Path target) {
        if (target == null) throw new IllegalArgumentException("target must not be null");
        if (!Files.exists(target)) return;
        if (!Files.isDirectory(target)) throw new IllegalArgumentException(target + " exists and is not a directory");
        List<Path> others = others(target);
        if (others.isEmpty()) return;
        if (!Files.isDirectory(target.resolve(Varve.INCOMING_DIR), LinkOption.NOFOLLOW_LINKS))
            throw new IllegalArgumentException(target + " is not empty; a new store needs an empty or new directory");
        List<String> foreign = others.stream().map(p -> p.getFileName().toString())
                .filter(n -> !n.equals(Varve.INCOMING_DIR) && !STORE_ENTRIES.contains(n)).sorted().toList();
        if (!foreign.isEmpty())
            throw new IllegalArgumentException(target + " is not empty: beside " + Varve.INCOMING_DIR + ", the mark of an unfinished transfer, it"
                    + " holds " + foreign + ", which no transfer leaves there, so it is not one to wipe and start afresh; a new store needs an"
                    + " empty or new directory");
    }

    /**
     * Makes {@code target} a directory marked unfinished, holding nothing else, and locks it: creates it, or wipes an
     * earlier unfinished transfer there. Durable when it returns.
     *
     * @throws IllegalArgumentException if {@link #checkTarget} refuses it
     * @throws IllegalStateException    if a store is open on it or another transfer is writing it
     */
    public static IncomingStore prepare(Path target) {
        if (target == null) throw new IllegalArgumentException("target must not be null");
        Path dir = target.toAbsolutePath().normalize();
        checkTarget(dir); // before the lock: a refused target gets no lock file
        boolean created = !Files.exists(dir);
        StoreLock lock = StoreLock.acquire(dir, "transfer target");
        IncomingStore s = new IncomingStore(dir, created, lock);
        try {
            checkTarget(dir); // again under the lock: another command may have filled it in between
            if (Files.isDirectory(s.incoming)) s.deleteAllButLock(); // a killed run's, maybe half moved up by its commit
            Files.createDirectories(s.incoming);
            FileIOFactory.syncDirectory(dir);
            Path parent = dir.getParent();
            if (parent != null) FileIOFactory.syncDirectory(parent); // TARGET itself, when it is new
            return s;
        } catch (IOException e) {
            s.close();
            throw new StorageException("cannot prepare the transfer target", dir, e);
        } catch (RuntimeException e) {
            s.close();
            throw e;
        }
    }

    /** Where the store is built until {@link #commit}. */
    public Path storeDir() {
        return incoming;
    }

    /** The directory the finished store ends up in. */
    public Path target() {
        return target;
    }

    /**
     * Moves the finished, closed store up into TARGET (one atomic rename each, its own lock file left behind for
     * TARGET's) and then removes the unfinished mark, fsyncing the directory in between; then lets go of the lock.
     *
     * @throws IllegalStateException if the store built in {@link #storeDir()} is still open (nothing moves then), or the
     *                               transfer was already committed, discarded or closed
     */
    public void commit() {
        checkHeld();
        refuseOpenStore();
        try {
            try (Stream<Path> s = Files.list(incoming)) {
                for (Path c : s.toList()) {
                    if (c.getFileName().toString().equals(StoreLock.FILE)) Files.delete(c);
                    else Files.move(c, target.resolve(c.getFileName()), StandardCopyOption.ATOMIC_MOVE);
                }
            }
            FileIOFactory.syncDirectory(target);
            Files.delete(incoming);
            FileIOFactory.syncDirectory(target);
        } catch (IOException e) {
            throw new StorageException("cannot move the new store up into " + target + "; it stays marked unfinished", incoming, e);
        }
        close();
    }

    /**
     * Removes what the transfer put in TARGET, which was new or empty before it (TARGET too when {@link #prepare}
     * created it), and lets go of the lock: a transfer that failed leaves nothing behind. A transfer that is killed
     * instead leaves the unfinished mark.
     */
    public void discard() {
        checkHeld();
        try {
            deleteAllButLock();
            close();
            Files.deleteIfExists(target.resolve(StoreLock.FILE));
            if (createdTarget) Files.deleteIfExists(target);
        } catch (IOException e) {
            throw new StorageException("cannot remove the unfinished store", target, e);
        } finally {
            close();
        }
    }

    /**
     * Ends a transfer that failed before anything of its store arrived: when {@code .incoming} is empty and nothing
     * else lies beside it, removes it and the lock file, and TARGET itself when {@link #prepare} created it, as if the
     * transfer had never run, and returns true. Otherwise it only lets go of the lock and returns false: a target holding
     * part of a store stays unfinished, for the same transfer to be run again.
     *
     * @throws IllegalStateException if the transfer was already committed, discarded or closed
     * @throws StorageException      if the directory cannot be read or the mark removed (the lock is let go)
     */
    public boolean discardIfEmpty() {
        checkHeld();
        try (Stream<Path> in = Files.list(incoming)) {
            if (in.findAny().isPresent() || !others(target).equals(List.of(incoming))) return false;
            Files.delete(incoming);
        } catch (IOException e) {
            throw new StorageException("cannot remove the mark of a transfer that received nothing", incoming, e);
        } finally {
            close();
        }
        try {
            Files.deleteIfExists(target.resolve(StoreLock.FILE));
            if (createdTarget) Files.deleteIfExists(target);
        } catch (java.nio.file.DirectoryNotEmptyException filledMeanwhile) {
            // another command put something there once the lock was let go: it stays
        } catch (IOException e) {
            throw new StorageException("cannot remove the directory of a transfer that received nothing", target, e);
        }
        return true;
    }

    /** Whether {@link #prepare} created TARGET (it was not there before the transfer). */
    public boolean createdTarget() {
        return createdTarget;
    }

    /** Whether the transfer still holds TARGET: not yet committed, discarded or closed. */
    public boolean isHeld() {
        return lock != null;
    }

    /** Lets go of the lock, leaving TARGET as it is (unfinished, unless committed). Idempotent. */
    @Override
    public void close() {
        StoreLock l = lock;
        lock = null;
        if (l != null) l.release();
    }

    /**
     * The store built in {@link #storeDir()} must be closed: moving its files from under it, and deleting its lock
     * file, made its close fail (its checkpoint creates files in the directory moved away) and left the target a store
     * that needs recovery. Checked by taking its lock for a moment.
     */
    private void refuseOpenStore() {
        StoreLock built;
        try {
            built = StoreLock.acquire(incoming, "new store");
        } catch (IllegalStateException e) {
            throw new IllegalStateException("close the store built in " + incoming + " before the commit moves it up: " + e.getMessage(), e);
        }
        built.release();
    }

    private void checkHeld() {
        if (lock == null) throw new IllegalStateException("the transfer into " + target + " is already committed, discarded or closed");
    }

    private void deleteAllButLock() throws IOException {
        Path lockFile = target.resolve(StoreLock.FILE);
        try (Stream<Path> walk = Files.walk(target)) {
            for (Path p : walk.sorted(Comparator.reverseOrder()).toList()) if (!p.equals(target) && !p.equals(lockFile)) Files.delete(p);
        }
    }

    /** TARGET's entries other than its lock file (left by an earlier transfer that locked it and was refused). */
    private static List<Path> others(Path dir) {
        try (Stream<Path> s = Files.list(dir)) {
            return s.filter(p -> !p.getFileName().toString().equals(StoreLock.FILE)).toList();
        } catch (IOException e) {
            throw new StorageException("cannot list the transfer target", dir, e);
        }
    }
}
