package dev.varve.checkpoint;

import dev.varve.core.io.CorruptionException;
import dev.varve.core.io.FileIO;
import dev.varve.core.io.FileIOFactory;
import dev.varve.core.io.StorageException;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.regex.Pattern;

/**
 * The checkpoint directory: start and end markers ({@code cp-<id>-start.bin}, {@code cp-<id>-end.bin}) and
 * recovery files ({@code cp-<id>-recovery-<n>.bin}). File names carry the checkpoint id, so a listing is already an
 * index.
 */
public final class CheckpointMarkers {
    private static final String PREFIX = "cp-";
    /**
     * The names this class and {@link RecoveryFileWriter} give files, with the temporary suffix of one being written:
     * only these are deleted. An operator's copy beside them ({@code cp-0000000000000003-end.bin.bak}) is not the
     * store's, and a checkpoint that deleted it would destroy the one thing its owner kept.
     */
    private static final Pattern OWN_NAME = Pattern.compile("cp-\\d{16}-(start|end|recovery-\\d{2,})\\.bin(\\.tmp)?");
    private final FileIOFactory io;
    private final Path dir;

    /** The checkpoint directory {@code dir} (created if missing). */
    public CheckpointMarkers(FileIOFactory io, Path dir) {
        this.io = io;
        this.dir = dir;
        try {
            io.createDirectories(dir);
        } catch (IOException e) {
            throw new StorageException("cannot create checkpoint directory", dir, e);
        }
    }

    /** The file system seam. */
    public FileIOFactory io() {
        return io;
    }

    /** Path of the start marker of checkpoint {@code id}. */
    public Path startPath(long id) {
        return dir.resolve(String.format("%s%016d-start.bin", PREFIX, id));
    }

    /** Path of the end marker of checkpoint {@code id}. */
    public Path endPath(long id) {
        return dir.resolve(String.format("%s%016d-end.bin", PREFIX, id));
    }

    /** Path of recovery file {@code n} of checkpoint {@code id}. */
    public Path recoveryFilePath(long id, int n) {
        return dir.resolve(String.format("%s%016d-recovery-%02d.bin", PREFIX, id, n));
    }

    /** Writes a marker durably: temp file, fsync, atomic rename, directory fsync. */
    public void write(CheckpointMarker m) {
        Path target = m.kind() == CheckpointMarker.START ? startPath(m.id()) : endPath(m.id());
        Path tmp = target.resolveSibling(target.getFileName() + ".tmp");
        try {
            try (FileIO f = io.open(tmp, true)) {
                f.truncate(0);
                f.write(ByteBuffer.wrap(m.encode()), 0);
                f.force();
            }
            io.atomicMove(tmp, target);
        } catch (IOException e) {
            throw new StorageException("cannot write " + m + ": " + e.getMessage(), target, e);
        }
    }

    /** The start marker with the highest id, if any. */
    public Optional<CheckpointMarker> latestStart() {
        long best = latestStartId();
        return best < 0 ? Optional.empty() : Optional.of(read(startPath(best), CheckpointMarker.START));
    }

    /** The highest checkpoint id with a start marker, -1 when none; the marker itself is not read. */
    public long latestStartId() {
        long best = -1;
        for (Path p : list()) {
            if (isStart(p)) best = Math.max(best, idOf(p));
        }
        return best;
    }

    /**
     * The highest checkpoint id with an end marker, -1 when none: an end marker is written only after its start
     * marker (recovery files are not evidence: they are written before it).
     */
    public long latestEnd() {
        long best = -1;
        for (Path p : list()) {
            if (p.getFileName().toString().endsWith("-end.bin")) best = Math.max(best, idOf(p));
        }
        return best;
    }

    /** The end marker of checkpoint {@code id}, if written. */
    public Optional<CheckpointMarker> end(long id) {
        Path p = endPath(id);
        return io.exists(p) ? Optional.of(read(p, CheckpointMarker.END)) : Optional.empty();
    }

    /** The start marker of checkpoint {@code id}, if written. */
    public Optional<CheckpointMarker> start(long id) {
        Path p = startPath(id);
        return io.exists(p) ? Optional.of(read(p, CheckpointMarker.START)) : Optional.empty();
    }

    private CheckpointMarker read(Path p, int kind) {
        try (FileIO f = io.open(p, false)) {
            long size = f.size();
            // an end marker lists every page file's generation (12 bytes each): 16 MiB is over a million page files
            if (size > 16 << 20) throw new CorruptionException("checkpoint marker of " + size + " bytes is implausible", p, 0);
            ByteBuffer b = ByteBuffer.allocate((int) size);
            f.read(b, 0);
            CheckpointMarker m = CheckpointMarker.decode(b.array(), p);
            if (m.kind() != kind || m.id() != idOf(p))
                throw new CorruptionException("marker content (" + m + ") does not match its file name", p, 0);
            return m;
        } catch (IOException e) {
            throw new StorageException("cannot read checkpoint marker: " + e.getMessage(), p, e);
        }
    }

    /** Deletes markers and recovery files of checkpoints before {@code id}, the recovery files of {@code id}, and temp files. */
    public void deleteBefore(long id) {
        for (Path p : list()) {
            String n = p.getFileName().toString();
            if (!OWN_NAME.matcher(n).matches()) continue;
            long pid = idOf(p);
            boolean recovery = n.contains("-recovery-");
            if (n.endsWith(".tmp") || pid < id || (pid == id && recovery)) {
                try {
                    io.delete(p);
                } catch (IOException e) {
                    throw new StorageException("cannot delete old checkpoint file", p, e);
                }
            }
        }
    }

    private List<Path> list() {
        try {
            return io.list(dir, PREFIX);
        } catch (IOException e) {
            throw new StorageException("cannot list checkpoint directory", dir, e);
        }
    }

    /** Whether {@code p} names a start marker ({@link #startPath}). */
    public static boolean isStart(Path p) {
        return p.getFileName().toString().endsWith("-start.bin");
    }

    /** The checkpoint id in a marker's or recovery file's name ({@code cp-<16 digits>-...}), -1 when it is not one. */
    public static long idOf(Path p) {
        String n = p.getFileName().toString();
        try {
            return Long.parseLong(n.substring(PREFIX.length(), PREFIX.length() + 16));
        } catch (RuntimeException e) {
            return -1; // not ours; ignored
        }
    }
}
