package dev.varve.engine;

import dev.varve.core.io.FaultyFileIOFactory.Kind;
import dev.varve.core.io.FaultyFileIOFactory.Op;

import java.util.function.Predicate;

/**
 * Where in a checkpoint (or a recovery) a crash test kills the process: predicates for
 * {@link dev.varve.core.io.FaultyFileIOFactory#crashAt}, named after the checkpoint step they hit. They are
 * stateful; make a fresh one per arming.
 */
final class CrashPoints {
    private CrashPoints() {
    }

    /** The {@code n}-th write to a recovery file ({@code cp-<id>-recovery-<n>.bin}): step 3. */
    static Predicate<Op> recoveryFileWrite(int n) {
        return nth(n, op -> op.kind() == Kind.WRITE && op.names("-recovery-"));
    }

    /**
     * The {@code n}-th write to a page file once a start marker was renamed into place: step 6. A checkpoint writes a
     * run of consecutive pages of a file in one call, so it may make fewer than {@code n} writes; then the first fsync
     * of a page file after its writes began, before which none of them is durable.
     */
    static Predicate<Op> pageWriteAfterStartMarker(int n) {
        int[] writes = {0};
        return afterStartMarker(op -> op.names(".page")
                && (op.kind() == Kind.WRITE ? ++writes[0] == n : op.kind() == Kind.FORCE && writes[0] > 0 && writes[0] < n));
    }

    /** The {@code n}-th fsync of a page file once a start marker was renamed into place: step 6. */
    static Predicate<Op> pageFsyncAfterStartMarker(int n) {
        return afterStartMarker(nth(n, op -> op.kind() == Kind.FORCE && op.names(".page")));
    }

    /** The rename that would put an end marker in place: step 7. */
    static Predicate<Op> endMarkerMove() {
        return op -> op.kind() == Kind.MOVE && op.target() != null && op.target().getFileName().toString().endsWith("-end.bin");
    }

    /** The {@code n}-th write to a page file, whenever it comes (in a recovery: the binary restore's writes). */
    static Predicate<Op> pageWrite(int n) {
        return nth(n, op -> op.kind() == Kind.WRITE && op.names(".page"));
    }

    /** Matches {@code then} only for operations after the first rename of a start marker. */
    static Predicate<Op> afterStartMarker(Predicate<Op> then) {
        boolean[] started = {false};
        return op -> {
            if (!started[0]) {
                started[0] = op.kind() == Kind.MOVE && op.target() != null && op.target().getFileName().toString().endsWith("-start.bin");
                return false;
            }
            return then.test(op);
        };
    }

    private static Predicate<Op> nth(int n, Predicate<Op> p) {
        return dev.varve.core.io.FaultyFileIOFactory.nth(n, p);
    }
}
