package dev.varve.engine;

import dev.varve.config.RecoveryMode;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Random;
import java.util.stream.Stream;

/**
 * One store image of the corruption sweep, built once per run and copied for every trial: its directory, the
 * recovery mode it was written (and is reopened) in, and what it must hold. A clean-close image holds exactly the
 * model; a kill -9 image holds the acknowledged steps, plus at most the one step in flight when the child died,
 * whole or not at all ({@code withInFlight}, null for a clean image).
 */
record SweepImage(String name, Path dir, RecoveryMode mode, SweepModel acknowledged, SweepModel withInFlight, String inFlight) {

    /** A clean image: {@link SweepWorkload#IMAGE_STEPS} steps in this JVM, then {@code close()}. */
    static SweepImage clean(Path root, RecoveryMode mode) {
        Path dir = root.resolve("clean-" + mode);
        SweepModel model = SweepWorkload.buildClean(dir, mode);
        return new SweepImage("clean-" + mode, dir, mode, model, null, null);
    }

    /**
     * A kill -9 image: a child JVM runs the workload past {@link SweepWorkload#IMAGE_STEPS} steps, checkpointing
     * without waiting, and is killed -9 (destroyForcibly) once 50-450 ms (chosen by {@code rnd}) have passed and a
     * checkpoint is seen running (its start marker without its end marker; after 60 s it is killed anyway). The
     * checkpoint may finish before the kill lands, so up to {@code attempts} kills, until one leaves a checkpoint
     * unfinished on disk: the recovery files of CHECKPOINT_RECOVERY_FILE mode exist in no other image.
     */
    static SweepImage killed(Path root, RecoveryMode mode, Random rnd, int attempts) throws IOException, InterruptedException {
        SweepImage image = null;
        for (int a = 0; a < attempts && (image == null || !image.midCheckpoint()); a++) {
            if (image != null) delete(image.dir);
            image = killOnce(root, mode, rnd);
        }
        return image;
    }

    private static SweepImage killOnce(Path root, RecoveryMode mode, Random rnd) throws IOException, InterruptedException {
        Path dir = root.resolve("kill9-" + mode);
        Path ack = root.resolve("kill9-" + mode + ".ack");
        Path log = root.resolve("kill9-" + mode + ".log");
        long[] notBefore = {0};
        long delay = 50 + rnd.nextInt(400);
        long acked = FixtureChildJvm.killWhen(SweepWorkload.class, dir, mode, SweepWorkload.IMAGE_STEPS, ack, log, () -> {
            if (notBefore[0] == 0) notBefore[0] = System.nanoTime() + delay * 1_000_000;
            return System.nanoTime() >= notBefore[0] && unfinishedCheckpoint(dir);
        }, "sweep image " + mode);
        if (acked <= SweepWorkload.IMAGE_STEPS) throw new AssertionError("the child acknowledged only " + acked + " steps:\n" + Files.readString(log));
        SweepModel model = SweepWorkload.replay(acked);
        SweepWorkload.Step next = SweepWorkload.step(acked, model);
        SweepModel more = model.copy();
        more.apply(next, next.kind() == SweepWorkload.Kind.SNAPSHOT ? SweepWorkload.expectedId(model) : 0);
        return new SweepImage("kill9-" + mode, dir, mode, model, more, "step " + acked + ": " + next);
    }

    /** Whether the image was taken inside a checkpoint: a start marker without its end marker. */
    boolean midCheckpoint() {
        return unfinishedCheckpoint(dir);
    }

    private static boolean unfinishedCheckpoint(Path store) {
        try (Stream<Path> s = Files.list(store.resolve("checkpoints"))) {
            return s.map(p -> p.getFileName().toString()).anyMatch(n -> n.endsWith("-start.bin")
                    && !Files.exists(store.resolve("checkpoints").resolve(n.replace("-start.bin", "-end.bin"))));
        } catch (IOException e) {
            return false; // the directory is not there yet, or a file went while listing: no checkpoint seen
        }
    }

    /** The image's files (not directories), relative to its root, sorted. */
    List<Path> files() {
        try (Stream<Path> s = Files.walk(dir)) {
            List<Path> out = new ArrayList<>();
            s.filter(Files::isRegularFile).map(dir::relativize).sorted().forEach(out::add);
            return out;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Copies the image's tree to {@code target} (which must not exist). */
    void copyTo(Path target) throws IOException {
        try (Stream<Path> s = Files.walk(dir)) {
            for (Path p : (Iterable<Path>) s::iterator) {
                Path t = target.resolve(dir.relativize(p).toString());
                if (Files.isDirectory(p)) Files.createDirectories(t);
                else Files.copy(p, t);
            }
        }
    }

    /** Deletes a trial's copy (best effort: a hung trial may still hold its files). */
    static void delete(Path tree) {
        if (!Files.exists(tree)) return;
        try (Stream<Path> s = Files.walk(tree)) {
            s.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** How many files of {@code kind} the image holds. */
    int count(String kind) {
        return (int) files().stream().filter(p -> kind.equals(SweepFiles.kindOf(p))).count();
    }

    /** How many files of each kind the image holds, e.g. {@code lock=1 catalog-page=1 page=6 ...}. */
    String kindCounts() {
        StringBuilder b = new StringBuilder();
        for (String k : SweepFiles.kinds()) b.append(b.length() == 0 ? "" : " ").append(k).append('=').append(count(k));
        return b.toString();
    }

    @Override
    public String toString() {
        return name + " (" + acknowledged.steps() + " acknowledged steps, " + acknowledged.snapshots().size() + " snapshots declared, "
                + acknowledged.snapshots().values().stream().filter(s -> s.live).count() + " live"
                + (inFlight == null ? "" : "; in flight at the kill: " + inFlight + (midCheckpoint() ? "; inside a checkpoint" : "; between checkpoints"))
                + ")";
    }
}
