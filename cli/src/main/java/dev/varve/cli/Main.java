package dev.varve.cli;

import dev.varve.core.util.RealPaths;

import picocli.CommandLine;
import picocli.CommandLine.Command;

import java.io.PrintWriter;
import java.nio.file.AccessDeniedException;
import java.nio.file.DirectoryNotEmptyException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.NotDirectoryException;
import java.nio.file.Path;

/**
 * The {@code varve} tool: looks into, checks and copies store directories, serves a live store on the network and
 * backs one up from there. Every command but {@code load}, {@code backup} and {@code salvage} (which write only their
 * new directory) and {@code serve} (which runs the store) opens the store read-only and leaves every file
 * byte-identical.
 */
@Command(name = "varve", mixinStandardHelpOptions = true, version = "varve 0.1.0-SNAPSHOT",
        description = "Inspect, verify, copy and serve Varve store directories.",
        subcommands = {InfoCommand.class, VerifyCommand.class, SnapshotsCommand.class, GetCommand.class, ScanCommand.class, DumpCommand.class,
                LoadCommand.class, WalDumpCommand.class, BackupCommand.class, SalvageCommand.class, ServeCommand.class, CommandLine.HelpCommand.class},
        footerHeading = "%nExit codes:%n",
        footer = {"  0   success (verify: no damage found)",
                "  1   damage found (verify), or entries lost (salvage)",
                "  2   the store cannot be used: not a store, open elsewhere, unreadable, or the operation failed (backup --from: the "
                        + "transfer failed; NEWDIR stays marked unfinished once part of the image was written, and is removed if this run "
                        + "created it and nothing was)",
                "  3   key absent (get)",
                "  64  bad command line",
                "  serve and backup --follow run until stopped: on SIGTERM (Ctrl-C) they close the store cleanly;",
                "  the JVM then exits 143 (130), as a Java process a signal stops does (systemd: SuccessExitStatus=143)"})
public final class Main implements Runnable {
    /** Success; for verify, no damage. */
    public static final int OK = 0;
    /** Damage found (verify) or entries lost (salvage). */
    public static final int DAMAGE = 1;
    /** The store cannot be used, or the operation failed. */
    public static final int UNUSABLE = 2;
    /** The key is absent ({@code get}). */
    public static final int ABSENT = 3;
    /** Bad command line (sysexits EX_USAGE). */
    public static final int USAGE = 64;

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Override
    public void run() {
        throw new CommandLine.ParameterException(spec.commandLine(), "a command is required");
    }

    /** Runs the tool with {@code args}, printing to {@code out} and {@code err}; returns the exit code. */
    public static int run(PrintWriter out, PrintWriter err, String... args) {
        CommandLine cl = new CommandLine(new Main());
        cl.setOut(out);
        cl.setErr(err);
        // picocli would read an argument @FILE as FILE's content, even after "--": a key or --from bound that starts
        // with '@' (scan prints such keys as they are) would silently name another key whenever such a file exists
        cl.setExpandAtFiles(false);
        cl.setParameterExceptionHandler((e, a) -> {
            e.getCommandLine().getErr().println("varve: " + e.getMessage());
            e.getCommandLine().usage(e.getCommandLine().getErr());
            return USAGE;
        });
        cl.setExecutionExceptionHandler((e, line, parsed) -> {
            line.getErr().println("varve: " + describe(e));
            return e instanceof IllegalArgumentException ? USAGE : UNUSABLE; // an unusable store, a failed operation
        });
        int code = cl.execute(args);
        if (out.checkError() && code != UNUSABLE) { // flushes; a PrintWriter swallows write errors (a full disk, a closed pipe)
            err.println("varve: the output could not be written whole (a full disk, or a pipe closed early)");
            code = UNUSABLE;
        }
        err.flush();
        return code;
    }

    /** A failure in one line: the exception's message, with its cause when that says more. */
    static String describe(Throwable e) {
        String m = message(e);
        Throwable cause = e.getCause();
        if (cause == null || cause.getMessage() == null) return m;
        String c = message(cause);
        if (m.contains(cause.toString())) return m.replace(cause.toString(), c); // a wrapper that quotes its cause's class name
        if (m.contains(c)) return m;
        // a file-system failure's own message is often its path alone: a wrapper naming the path has not said what went wrong
        return m.contains(cause.getMessage()) && !(cause instanceof FileSystemException) ? m : m + " (" + c + ")";
    }

    /**
     * The message of one exception; a file-system failure's says what went wrong with the file, where the JDK's
     * message is the bare path and only the class name says the rest.
     */
    private static String message(Throwable e) {
        if (e instanceof FileSystemException f && f.getFile() != null) {
            String why = f instanceof NoSuchFileException ? "no such file or directory"
                    : f instanceof AccessDeniedException ? "permission denied"
                    : f instanceof FileAlreadyExistsException ? "already exists"
                    : f instanceof NotDirectoryException ? "not a directory"
                    : f instanceof DirectoryNotEmptyException ? "directory not empty"
                    : f.getReason() != null ? f.getReason() : f.getClass().getSimpleName();
            return f.getFile() + (f.getOtherFile() == null ? "" : " -> " + f.getOtherFile()) + ": " + why;
        }
        return e.getMessage() == null ? e.toString() : e.getMessage();
    }

    /**
     * Refuses a target ({@code option}'s {@code target}) inside the store being read or its archive: the source
     * these commands leave unchanged would gain files, and a copy inside its own pages or WAL could be taken for them.
     * Compared with symbolic links followed, so that a link to the store does not pass for another directory.
     */
    static void refuseInsideSource(String option, Path target, Path store, LayoutOptions layout) {
        Path t = RealPaths.of(target);
        for (Path source : new Path[]{store, layout.archiveOf(store)}) {
            Path s = RealPaths.of(source);
            if (t.startsWith(s))
                throw new IllegalArgumentException(option + " " + target + " lies inside " + source + ", which this command reads and leaves unchanged; write elsewhere");
        }
    }

    /** Refuses a file named by {@code option} that is not there: a bad command line, said before anything else is done. */
    static void requireFile(String option, Path file) {
        if (!Files.isRegularFile(file))
            throw new IllegalArgumentException(option + " " + file + ": " + (Files.exists(file) ? "not a file" : "no such file"));
    }

    public static void main(String[] args) {
        // UTF-8 whatever the locale: --encoding utf8 prints keys and values as UTF-8 text, and under a C or POSIX
        // locale (a container's, cron's) the default charset would print each non-ASCII character as '?', silently
        // stdout through its own descriptor, not System.out: that PrintStream swallows write errors itself, so run()'s
        // check would never see a full disk or a closed pipe (a scan into `head -1` would go on and exit 0)
        System.exit(run(utf8(new java.io.FileOutputStream(java.io.FileDescriptor.out)), utf8(System.err), args));
    }

    private static PrintWriter utf8(java.io.OutputStream stream) {
        return new PrintWriter(new java.io.OutputStreamWriter(stream, java.nio.charset.StandardCharsets.UTF_8), true);
    }
}
