package dev.varve.core.io;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import java.util.function.Predicate;

/**
 * A seeded file system that loses what was not made durable (H2's {@code FilePathReorderWrites} idea behind
 * BookKeeper's {@code FileChannelProvider} seam). Writes reach the real files at once, so the process reads its own
 * writes; {@link #powerLoss()} then puts every file where a power cut could have left it: un-fsynced writes dropped,
 * kept or torn at 512-byte sector boundaries, un-forced stores into mappings reverted (maybe keeping a prefix of
 * their sectors), files created and never forced gone or empty. Renames and deletes are durable at once (the real
 * factory fsyncs the directory on a rename). Every choice comes from the seed, which every injected exception and
 * {@link #toString()} print.
 *
 * <p>Faults: {@link #crashAt} kills the "process" at the first operation a predicate matches — that operation fails
 * (a write is torn first) and so does every later one; {@link #powerCutAt} does the same, but the write it stops
 * surely leaves a torn sector run on disk; and {@link #failForce} makes fsyncs of chosen files fail while everything
 * else goes on. Tests then halt the store, call {@link #powerLoss()} and reopen.
 *
 * <p>Durability is simulated, never asked of the disk: an fsync, an msync or a directory fsync through this factory
 * records what it made durable and makes no system call, because what a power cut keeps is decided by
 * {@link #powerLoss()} from those records, and no test outlives the machine's page cache. The real calls cost the
 * suite minutes (a crash test's store forces its logs at every checkpoint) and decided nothing.
 */
@SuppressWarnings("try") // an Access admits an operation for the length of its try block
public final class FaultyFileIOFactory implements FileIOFactory {
    /** What an operation does. */
    public enum Kind { OPEN, READ, WRITE, TRUNCATE, FORCE, MAP, MAP_FORCE, MOVE, DELETE, MKDIRS, LIST, DIR_FORCE }

    /**
     * One operation, offered to the {@link #crashAt} predicate before it runs.
     *
     * @param kind   what it does
     * @param path   the file (the source of a {@link Kind#MOVE})
     * @param target the destination of a {@link Kind#MOVE}, else null
     * @param seq    1-based number of this operation among all this factory has run
     */
    public record Op(Kind kind, Path path, Path target, long seq) {
        /** True when the file name (or a move's destination name) contains {@code part}. */
        public boolean names(String part) {
            return path.getFileName().toString().contains(part)
                    || (target != null && target.getFileName().toString().contains(part));
        }

        @Override
        public String toString() {
            return kind + " " + path + (target == null ? "" : " -> " + target) + " (op #" + seq + ")";
        }
    }

    private final FileIOFactory real = FileIOFactory.standard();
    private final long seed;
    private final Random random;
    private final Map<Path, FaultyFile> files = new ConcurrentHashMap<>();
    /** Operations hold the read lock; {@link #powerLoss()} the write lock, so no operation runs across it. */
    private final ReentrantReadWriteLock gate = new ReentrantReadWriteLock();
    private final AtomicLong seq = new AtomicLong();
    private final Object triggerLock = new Object();
    private Predicate<Op> crashAt; // triggerLock
    private boolean tearDurably; // triggerLock: armed by powerCutAt (see there)
    private volatile Op crashedAt;
    private volatile Predicate<Path> failForce = p -> false;
    private volatile long epoch;
    private volatile Predicate<Path> strictDirectoryEntries = p -> false;
    private int powerLosses;

    /** A factory whose every random choice follows {@code seed}. */
    public FaultyFileIOFactory(long seed) {
        this.seed = seed;
        this.random = new Random(Seeds.mix(seed));
    }

    /** The seed. */
    public long seed() {
        return seed;
    }

    /** Kills the process at the first operation {@code where} matches (evaluated under a lock, one op at a time). */
    public void crashAt(Predicate<Op> where) {
        arm(where, false);
    }

    /**
     * Cuts the power in the middle of the first write {@code where} matches: every 512-byte sector of it before the
     * last one it changes reaches the disk and stays there through {@link #powerLoss()} (in a file whose creation is
     * durable), that sector and the rest never do, and the process dies there as with {@link #crashAt}. A test that
     * needs a torn page on disk gets one whatever the seed picks for the other un-fsynced writes (which
     * {@link #crashAt}'s random tear may leave whole, drop, or cut between unchanged sectors).
     */
    public void powerCutAt(Predicate<Op> where) {
        arm(where, true);
    }

    private void arm(Predicate<Op> where, boolean durableTear) {
        synchronized (triggerLock) {
            crashAt = where;
            tearDurably = durableTear;
        }
    }

    /** Makes fsyncs ({@link FileIO#force()} and {@link MappedRegion#force}) of matching files throw; null for none. */
    public void failForce(Predicate<Path> which) {
        failForce = which == null ? p -> false : which;
    }

    /**
     * When on, a file created through this factory vanishes at a power loss until its directory is fsynced (by a
     * rename into it, a directory created in it, or {@link #forceDirectory}), however often the file itself was forced — what POSIX
     * promises, and what ext4 without journalling, or a careful reading of fsync(2), gives. Off by default.
     */
    public void strictDirectoryEntries(boolean on) {
        strictDirectoryEntries(on ? p -> true : null);
    }

    /** {@link #strictDirectoryEntries(boolean)} for the files {@code which} matches only; null for none. */
    public void strictDirectoryEntries(Predicate<Path> which) {
        strictDirectoryEntries = which == null ? p -> false : which;
    }

    /** The operation the process died at, or null while it lives. */
    public Op crashedAt() {
        return crashedAt;
    }

    /** Un-fsynced entries logged for {@code file} (tests of this class). */
    int pendingEntries(Path file) {
        FaultyFile f = files.get(key(file));
        return f == null ? 0 : f.pendingEntries();
    }

    /** A stateful predicate that matches the {@code n}-th (1-based) operation {@code p} matches. */
    public static Predicate<Op> nth(int n, Predicate<Op> p) {
        int[] seen = {0};
        return op -> p.test(op) && ++seen[0] == n;
    }

    /**
     * Cuts the power: every file goes back to what is durable (see the class comment). Afterwards the factory is
     * fresh: nothing pending, no crash armed, alive; handles opened before are stale and refuse every call.
     */
    public void powerLoss() {
        gate.writeLock().lock();
        try {
            Random rnd = new Random(Seeds.mix(seed + ++powerLosses)); // java.util.Random of nearby seeds starts alike
            List<FaultyFile> all = new ArrayList<>(files.values());
            all.sort(Comparator.comparing(FaultyFile::path));
            for (FaultyFile f : all) f.powerLoss(rnd, strictDirectoryEntries.test(f.path()));
            files.clear();
            synchronized (triggerLock) {
                crashAt = null;
                crashedAt = null;
            }
            failForce = p -> false;
            epoch++;
        } catch (IOException e) {
            throw new UncheckedIOException("power loss simulation failed " + this, e);
        } finally {
            gate.writeLock().unlock();
        }
    }

    // ---------------------------------------------------------------- FileIOFactory

    @Override
    public FileIO open(Path file, boolean create) throws IOException {
        try (Access a = begin(Kind.OPEN, file, null, epoch)) {
            if (a.crash()) throw a.crashException("not opened");
            Path k = key(file);
            boolean existed = Files.exists(k);
            FileChannel ch = create
                    ? FileChannel.open(k, StandardOpenOption.READ, StandardOpenOption.WRITE, StandardOpenOption.CREATE)
                    : FileChannel.open(k, StandardOpenOption.READ, StandardOpenOption.WRITE);
            FaultyFile state = files.compute(k, (p, f) -> f != null ? f : new FaultyFile(k, !existed));
            return new FaultyFileIO(this, file, ch, state, a.epoch);
        }
    }

    @Override
    public boolean exists(Path file) {
        try (Access a = begin(Kind.READ, file, null, epoch)) {
            return real.exists(file);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    @Override
    public void delete(Path file) throws IOException {
        try (Access a = begin(Kind.DELETE, file, null, epoch)) {
            if (a.crash()) throw a.crashException("not deleted");
            real.delete(file);
            files.remove(key(file));
        }
    }

    @Override
    public void atomicMove(Path from, Path to) throws IOException {
        try (Access a = begin(Kind.MOVE, from, to, epoch)) {
            if (a.crash()) throw a.crashException("not renamed");
            real.atomicMove(from, to); // fsyncs the directory: the rename is durable
            Path k = key(to);
            directorySynced(k.getParent());
            files.remove(k);
            FaultyFile moved = files.remove(key(from));
            if (moved != null) {
                moved.renamedTo(k);
                files.put(k, moved);
            }
        }
    }

    @Override
    public void forceDirectory(Path dir) throws IOException {
        try (Access a = begin(Kind.DIR_FORCE, dir, null, epoch)) {
            if (a.crash()) throw a.crashException("directory not fsynced");
            directorySynced(key(dir)); // simulated, like a file's fsync
        }
    }

    @Override
    public List<Path> list(Path dir, String prefix) throws IOException {
        try (Access a = begin(Kind.LIST, dir, null, epoch)) {
            return real.list(dir, prefix);
        }
    }

    @Override
    public void createDirectories(Path dir) throws IOException {
        try (Access a = begin(Kind.MKDIRS, dir, null, epoch)) {
            if (a.crash()) throw a.crashException("not created");
            boolean existed = Files.isDirectory(dir);
            real.createDirectories(dir);
            if (!existed) directorySynced(key(dir).getParent()); // the real factory fsyncs the new directory's parent
        }
    }

    @Override
    public String toString() {
        Op c = crashedAt;
        return "FaultyFileIOFactory[seed " + seed + " (rerun with -Dvarve.seed=" + seed + ")" + (c == null ? "" : ", crashed at " + c) + "]";
    }

    private void directorySynced(Path directory) {
        for (FaultyFile f : files.values()) {
            if (directory != null && directory.equals(f.path().getParent())) f.directorySynced();
        }
    }

    private static Path key(Path p) {
        return p.toAbsolutePath().normalize();
    }

    // ---------------------------------------------------------------- the gate every operation passes

    /**
     * Admits one operation: refuses it if its handle is stale or the process is dead, and tells it whether it is
     * the one {@link #crashAt} picked. Holds the gate's read lock until closed.
     */
    Access begin(Kind kind, Path path, Path target, long handleEpoch) throws IOException {
        gate.readLock().lock();
        try {
            if (handleEpoch != epoch) throw new IOException("stale handle of " + path + ": opened before a power loss " + this);
            Op op = new Op(kind, path, target, seq.incrementAndGet());
            boolean crash = false;
            boolean durableTear = false;
            synchronized (triggerLock) {
                Op dead = crashedAt;
                if (dead != null) throw new IOException("process is dead (injected crash at " + dead + "); refused " + op + " " + this);
                if (crashAt != null && crashAt.test(op)) {
                    crashedAt = op;
                    crashAt = null;
                    crash = true;
                    durableTear = tearDurably;
                }
            }
            return new Access(op, crash, durableTear, epoch);
        } catch (IOException | RuntimeException | Error e) {
            gate.readLock().unlock();
            throw e;
        }
    }

    /** An admitted operation; closing it lets a power loss proceed. */
    final class Access implements AutoCloseable {
        final Op op;
        final long epoch;
        private final boolean crash;
        private final boolean durableTear;

        Access(Op op, boolean crash, boolean durableTear, long epoch) {
            this.op = op;
            this.crash = crash;
            this.durableTear = durableTear;
            this.epoch = epoch;
        }

        /** True when the process dies at this operation. */
        boolean crash() {
            return crash;
        }

        /** True when this dying write is one {@link #powerCutAt} tears: its sectors before the last changed one land. */
        boolean durableTear() {
            return durableTear;
        }

        Random random() {
            return random;
        }

        IOException crashException(String detail) {
            return new IOException("injected crash at " + op + ": " + detail + " " + FaultyFileIOFactory.this);
        }

        void maybeFailForce() throws IOException {
            if (failForce.test(op.path)) throw new IOException("injected fsync failure of " + op.path + " " + FaultyFileIOFactory.this);
        }

        @Override
        public void close() {
            gate.readLock().unlock();
        }
    }
}
