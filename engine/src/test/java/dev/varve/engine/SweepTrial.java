package dev.varve.engine;

import dev.varve.core.io.StorageException;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.regex.Pattern;

/**
 * One trial of the corruption sweep: copy an image, damage one file of one kind (flip a byte of its used part,
 * truncate it at a random length inside its used part, or delete it), reopen the copy, read everything against the
 * image's model, declare one more snapshot (its id must be new to the application), close — and classify how it
 * ended. The open, reads and close run on a worker thread under a timeout, so a hang is an outcome, not a stuck
 * build.
 *
 * <p>No kind of file is exempt and none gets a special rule: the outcome is judged by what the reopened store
 * reads, so damage to a file the store can do without or rebuild (the empty lock file, which it recreates; drops.log,
 * whose drops the retention policy recomputes) simply reads {@link Outcome#RIGHT}. An error is named only when it
 * names the damaged file itself: an error about a neighbour (the Maplog that no longer matches a truncated Pagelog,
 * the recovery file an end marker's deletion sends recovery looking for) leaves the operator to guess.
 */
final class SweepTrial {
    /** The damage; {@code NONE} is the control trial of an undamaged copy. */
    enum Op { FLIP, TRUNCATE, DELETE, NONE }

    static final List<Op> DAMAGE = List.of(Op.FLIP, Op.TRUNCATE, Op.DELETE);

    /**
     * How a trial ended, exactly one per trial. Acceptable: {@link #RIGHT} (everything read matches the model) and
     * {@link #NAMED_ERROR} (a {@link StorageException}, or subclass such as a CorruptionException, whose message names
     * the damaged file). Failures of the store: {@link #WRONG_DATA} (a value, a key, a snapshot's rank or presence
     * differs from the model, a live snapshot is missing or "never declared", a snapshot id is handed out again),
     * {@link #UNNAMED_ERROR} (any other exception, or a storage error naming some other or no file), {@link #HANG}.
     */
    enum Outcome { RIGHT, NAMED_ERROR, WRONG_DATA, UNNAMED_ERROR, HANG }

    /** A trial's identity (reproducible with {@code -Dvarve.sweepOnly=image:kind:op:seed}) and its end. */
    record Result(String image, String kind, Op op, long seed, String damage, Outcome outcome, String detail) {
        String id() {
            return image + ":" + kind + ":" + op + ":" + seed;
        }
    }

    private final long timeoutSeconds;
    private ExecutorService worker = newWorker();

    SweepTrial(long timeoutSeconds) {
        this.timeoutSeconds = timeoutSeconds;
    }

    private static ExecutorService newWorker() {
        return Executors.newSingleThreadExecutor(r -> {
            Thread t = new Thread(r, "sweep-trial");
            t.setDaemon(true); // a hung trial's thread must not keep the test JVM alive
            return t;
        });
    }

    /**
     * Runs one trial in {@code work} (a fresh directory per trial); null when the image has no file of the kind or the
     * chosen file has no bytes to flip or cut (the empty lock file).
     */
    Result run(SweepImage image, String kind, Op op, long seed, Path work) throws IOException, InterruptedException {
        if (op == Op.NONE) {
            image.copyTo(work);
            return openAndClassify(image, null, null, op, seed, work, "none");
        }
        List<Path> files = image.files().stream().filter(p -> kind.equals(SweepFiles.kindOf(p))).toList();
        if (files.isEmpty()) return null;
        Random rnd = new Random(seed);
        Path relative = files.get(rnd.nextInt(files.size()));
        long used = SweepFiles.usedBytes(image.dir().resolve(relative.toString()), kind);
        if (used == 0 && op != Op.DELETE) return null;
        image.copyTo(work);
        Path file = work.resolve(relative.toString());
        String damage;
        switch (op) {
            case FLIP -> {
                long offset = rnd.nextLong(used);
                FixtureSupport.flipByte(file, offset);
                damage = relative + " flipped at offset " + offset + " of " + used + " used bytes";
            }
            case TRUNCATE -> {
                long length = rnd.nextLong(used);
                SweepFiles.truncate(file, length);
                damage = relative + " truncated to " + length + " of " + used + " used bytes";
            }
            case DELETE -> {
                Files.delete(file);
                damage = relative + " deleted";
            }
            default -> throw new AssertionError(op);
        }
        return openAndClassify(image, kind, relative, op, seed, work, damage);
    }

    private Result openAndClassify(SweepImage image, String kind, Path relative, Op op, long seed, Path work, String damage)
            throws InterruptedException {
        Future<String> f = worker.submit(() -> openAndRead(image, work));
        Outcome outcome;
        String detail;
        try {
            detail = f.get(timeoutSeconds, TimeUnit.SECONDS);
            outcome = detail == null ? Outcome.RIGHT : Outcome.WRONG_DATA;
        } catch (TimeoutException e) {
            f.cancel(true);
            worker.shutdownNow();
            worker = newWorker(); // the old thread may never come back; it is a daemon
            outcome = Outcome.HANG;
            detail = "open, read and close did not finish in " + timeoutSeconds + " s";
        } catch (ExecutionException e) {
            Throwable t = e.getCause();
            outcome = names(t, relative, image) ? Outcome.NAMED_ERROR : Outcome.UNNAMED_ERROR;
            detail = describe(t);
        }
        if (outcome != Outcome.HANG) SweepImage.delete(work);
        return new Result(image.name(), kind, op, seed, damage, outcome, detail);
    }

    void close() {
        worker.shutdownNow();
    }

    /**
     * Opens the damaged copy, compares it with the acknowledged model (and after a kill, failing that, with the
     * model that includes the step in flight), then declares a snapshot whose id must be above every id the application was given, and closes.
     * A difference wins over an error at close; an error at close of a store that read right is the trial's outcome.
     */
    private static String openAndRead(SweepImage image, Path dir) {
        Varve store = Varve.open(SweepWorkload.config(dir, image.mode()));
        String diff;
        try {
            SweepModel model = image.acknowledged();
            diff = SweepCheck.differences(store, model);
            if (diff != null && image.withInFlight() != null && SweepCheck.differences(store, image.withInFlight()) == null) {
                model = image.withInFlight();
                diff = null;
            }
            if (diff == null) {
                long id = store.snapshotNow();
                if (id <= model.latestId()) diff = "a new snapshot got id " + id + ", but the application holds ids up to " + model.latestId();
            }
        } catch (RuntimeException | Error e) {
            try {
                store.close();
            } catch (RuntimeException second) {
                e.addSuppressed(second);
            }
            throw e;
        }
        try {
            store.close();
        } catch (RuntimeException e) {
            if (diff == null) throw e;
            diff += " (and close failed: " + e + ")";
        }
        return diff;
    }

    /**
     * Whether {@code t} is a storage error whose message names the damaged file: its name, and its directory too when
     * another file of the image has the same name (each archive level has its own maplog-L0.log, ...).
     */
    private static boolean names(Throwable t, Path relative, SweepImage image) {
        if (relative == null || !(t instanceof StorageException) || t.getMessage() == null) return false;
        String name = relative.getFileName().toString();
        long sameName = image.files().stream().filter(p -> p.getFileName().toString().equals(name)).count();
        String needed = sameName > 1 ? relative.getParent().getFileName() + "/" + name : name;
        // as a whole name: level-2/maplog-L0.log is not named by a message about level-2/maplog-L0.log.128
        return Pattern.compile("(?<![\\w-])" + Pattern.quote(needed) + "(?!\\w|\\.\\d)").matcher(t.getMessage().replace('\\', '/')).find();
    }

    /** The exception, its causes, and where in Varve it was thrown. */
    private static String describe(Throwable t) {
        StringBuilder b = new StringBuilder();
        Throwable root = t;
        for (Throwable c = t; c != null; c = c.getCause()) {
            if (c != t) b.append(" / caused by ");
            b.append(c.getClass().getName()).append(": ").append(c.getMessage());
            root = c;
        }
        for (StackTraceElement e : root.getStackTrace()) {
            if (e.getClassName().startsWith("dev.varve.") && !e.getClassName().startsWith("dev.varve.engine.Sweep")) {
                b.append(" (at ").append(e.getClassName().substring(e.getClassName().lastIndexOf('.') + 1)).append('.')
                        .append(e.getMethodName()).append(':').append(e.getLineNumber()).append(')');
                break;
            }
        }
        return b.toString();
    }
}
