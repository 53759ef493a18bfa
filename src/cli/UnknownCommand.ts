/** A command as the parser walks the tree: its name and, for a group (`agents`), the commands under it. */
interface CommandNode {
  readonly name: string
  readonly commands: ReadonlyArray<CommandNode>
}

interface Descriptor {
  readonly _tag: string
  readonly name?: string
  readonly command?: Descriptor
  readonly parent?: Descriptor
  readonly children?: ReadonlyArray<Descriptor>
}

/**
 * Read from @effect/cli's descriptor, the tree its parser walks: the public `getSubcommands` returns a group
 * under a group (`switchyard agents`) as its bare parent, without the commands under it.
 */
const nodeOf = (descriptor: Descriptor): CommandNode => {
  switch (descriptor._tag) {
    case "Map":
      return nodeOf(descriptor.command!)
    case "Subcommands":
      return { name: nodeOf(descriptor.parent!).name, commands: descriptor.children!.map(nodeOf) }
    default:
      return { name: descriptor.name ?? "", commands: [] }
  }
}

/**
 * What to say of the first word of a command line (after `switchyard`) that names no command of the group
 * before it (`frob` of `agents frob`): that group's path and its commands; `undefined` when there is none. @effect/cli's own message names the root
 * and its commands whatever the depth; this one is the same message for the group that was meant. The walk
 * stops at the first option (the parser's to judge) and at a command that is no group (its arguments follow).
 */
export const unknownCommand = (root: { readonly descriptor: unknown }, args: ReadonlyArray<string>) => {
  let group = nodeOf(root.descriptor as Descriptor)
  const path = [group.name]
  for (const word of args) {
    if (word.startsWith("-") || group.commands.length === 0) return undefined
    // as the parser: command names are not case-sensitive (CliConfig's default)
    const next = group.commands.find((c) => c.name.toLowerCase() === word.toLowerCase())
    if (next === undefined) {
      const names = group.commands.map((c) => `'${c.name}'`)
      const at = path.join(" ")
      return `Invalid subcommand for ${at} - use${names.length === 1 ? "" : " one of"} ${names.join(", ")} ` +
        `(see ${at} --help)`
    }
    group = next
    path.push(next.name)
  }
  return undefined
}
