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
     * A kill -9 image: a child JVM runs the workload past {@link SweepWorkload#IMAGE_STEPS} steps, requesting
     * checkpoints it does not wait for, and is killed -9 (destroyForcibly) 50-450 ms later, chosen by {@code rnd}.
     * Up to {@code attempts} kills, until one lands inside a checkpoint (a start marker without its end marker, and
     * so, in CHECKPOINT_RECOVERY_FILE mode, the recovery files): those files exist in no other image.
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
        long acked = FixtureChildJvm.killUnderLoad(SweepWorkload.class, dir, mode, SweepWorkload.IMAGE_STEPS, ack, log, 50 + rnd.nextInt(400),
                "sweep image " + mode);
        if (acked <= SweepWorkload.IMAGE_STEPS) throw new AssertionError("the child acknowledged only " + acked + " steps:\n" + Files.readString(log));
        SweepModel model = SweepWorkload.replay(acked);
        SweepWorkload.Step next = SweepWorkload.step(acked, model);
        SweepModel more = model.copy();
        more.apply(next, next.kind() == SweepWorkload.Kind.SNAPSHOT ? SweepWorkload.expectedId(model) : 0);
        return new SweepImage("kill9-" + mode, dir, mode, model, more, "step " + acked + ": " + next);
    }

    /** Whether the image was taken inside a checkpoint: a start marker without its end marker. */
    boolean midCheckpoint() {
        for (Path p : files()) {
            String n = p.getFileName().toString();
            if (n.endsWith("-start.bin") && !Files.exists(dir.resolve(p.toString().replace("-start.bin", "-end.bin")))) return true;
        }
        return false;
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

    @Override
    public String toString() {
        return name + " (" + acknowledged.steps() + " acknowledged steps, " + acknowledged.snapshots().size() + " snapshots declared, "
                + acknowledged.snapshots().values().stream().filter(s -> s.live).count() + " live"
                + (inFlight == null ? "" : "; in flight at the kill: " + inFlight + (midCheckpoint() ? "; inside a checkpoint" : "; between checkpoints"))
                + ")";
    }
}
