package dev.varve.server;

import java.io.PrintStream;

/**
 * The network commands, until they join the {@code varve} tool: {@code serve} and {@code backup --from}. Exit codes:
 * 0 done, 1 the operation failed (the message says why), 2 bad usage.
 */
public final class ServerMain {
    private ServerMain() {
    }

    /** Runs one command. */
    public static void main(String[] args) throws InterruptedException {
        System.exit(run(args, System.out, System.err));
    }

    static int run(String[] args, PrintStream out, PrintStream err) throws InterruptedException {
        if (args.length == 0) return usage(err, "no command given");
        try {
            switch (args[0]) {
                case "serve": return ServeCommand.run(args, out);
                case "backup": return BackupCommand.run(args, out);
                default: return usage(err, "unknown command " + args[0]);
            }
        } catch (IllegalArgumentException e) {
            return usage(err, e.getMessage());
        } catch (BackupException | IllegalStateException e) {
            err.println("error: " + e.getMessage());
            return 1;
        }
    }

    private static int usage(PrintStream err, String problem) {
        err.println("error: " + problem);
        err.println("usage: " + ServeCommand.USAGE);
        err.println("       " + BackupCommand.USAGE);
        return 2;
    }
}
