import { Field, InputType, ObjectType, registerEnumType } from 'type-graphql';
import type { BudgetView } from './budget.service';

export enum BudgetActionEnum {
  BLOCK = 'block',
  NOTIFY = 'notify',
}
registerEnumType(BudgetActionEnum, {
  name: 'BudgetAction',
  description:
    '`BLOCK`: refuse work that could pass the limit (402 BUDGET_EXCEEDED); `NOTIFY`: only announce.',
});

const MONEY = 'Decimal string in the currency, with its minor-unit digits.';

@ObjectType('Budget', {
  description: "The viewer's (a team token: its team's) monthly budget and this month's spend.",
})
export class BudgetType {
  @Field(() => String, { nullable: true, description: `${MONEY} Null: no budget set.` })
  monthlyLimit!: string | null;

  @Field(() => String)
  currency!: string;

  @Field(() => String, { description: `${MONEY} Ended jobs this month, plus running jobs so far.` })
  spent!: string;

  @Field(() => String, { description: `${MONEY} What unfinished jobs may still cost at most.` })
  committed!: string;

  @Field(() => Date)
  periodStart!: Date;

  @Field(() => Date, { description: 'Excluded.' })
  periodEnd!: Date;

  @Field(() => BudgetActionEnum, { nullable: true })
  action!: BudgetActionEnum | null;

  @Field(() => String, { nullable: true, description: 'Where `budget.threshold` messages go.' })
  webhook!: string | null;

  static from(v: BudgetView): BudgetType {
    return Object.assign(new BudgetType(), v);
  }
}

@InputType()
export class BudgetInput {
  @Field(() => String, { description: `${MONEY} A positive limit per calendar month (UTC).` })
  monthlyLimit!: string;

  @Field(() => BudgetActionEnum)
  action!: BudgetActionEnum;

  @Field(() => String, { nullable: true })
  webhook?: string | null;
}
