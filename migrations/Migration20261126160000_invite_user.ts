import { Migration } from '@mikro-orm/migrations';

export class Migration20261126160000_invite_user extends Migration {

  override async up(): Promise<void> {
    this.addSql(`alter table "team_invites" add column "invitee_user_id" uuid null;`);
    this.addSql(`alter table "team_invites" add constraint "team_invites_invitee_user_id_foreign" foreign key ("invitee_user_id") references "users" ("id") on update cascade on delete cascade;`);
    this.addSql(`create index "team_invites_invitee_user_id_index" on "team_invites" ("invitee_user_id");`);
    // Earlier invitations by username: kept only where the name names one user; the rest answer no one.
    this.addSql(`update "team_invites" i set "invitee_user_id" = (select u."id" from "users" u where u."username" = i."username") where i."username" is not null and (select count(*) from "users" u where u."username" = i."username") = 1;`);
  }

  override async down(): Promise<void> {
    this.addSql(`alter table "team_invites" drop constraint "team_invites_invitee_user_id_foreign";`);
    this.addSql(`drop index "team_invites_invitee_user_id_index";`);
    this.addSql(`alter table "team_invites" drop column "invitee_user_id";`);
  }

}
