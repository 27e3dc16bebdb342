// `pihost completion bash|zsh`: prints the shell completion script for the whole command tree
// (services/cli/completion.ts builds it from the tree). No NATS connection, no file written.
import { Argument, type Command } from "commander";
import type { Run } from "../cli-run.ts";
import { completionScript, PATH_VALUES, SHELLS, type Shell } from "../completion.ts";

const paths = (kind: "file" | "dir") =>
  Object.keys(PATH_VALUES)
    .filter((k) => PATH_VALUES[k] === kind)
    .join(", ");

const INSTALL_HELP = `
Install (the script holds the command tree: print it again after upgrading pihost):
  bash, this shell:   source <(pihost completion bash)
  bash, every shell:  add that line to ~/.bashrc, or with bash-completion installed:
                      pihost completion bash > ~/.local/share/bash-completion/completions/pihost
  zsh, every shell:   mkdir -p ~/.zfunc && pihost completion zsh > ~/.zfunc/_pihost
                      and in ~/.zshrc, before compinit: fpath=(~/.zfunc $fpath)
                      (or write it to "\${fpath[1]}/_pihost" if that folder is yours), then start a new
                      shell; after changing it: rm -f ~/.zcompdump; compinit
  zsh, this shell:    source <(pihost completion zsh)   (after compinit has run)
Completed: commands, subcommands, options and their fixed values (e.g. plans approve --mode); files
for ${paths("file")}; folders for ${paths("dir")}.
Ids are not completed (that would need the host).`;

export function addCompletionCommand(program: Command, run: Run): void {
  program
    .command("completion")
    .description("print the shell completion script for bash or zsh")
    .addArgument(new Argument("<shell>", "the shell").choices(SHELLS))
    .addHelpText("after", INSTALL_HELP)
    .action((shell: Shell, _opts: unknown, cmd: Command) => {
      // The script is the output, with or without --json.
      run.deps.stdout(completionScript(cmd, shell));
    });
}
